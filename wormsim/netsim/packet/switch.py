"""Output-queued switch with a shared buffer, ns-3's dynamic PFC threshold and headroom, RED/ECN
marking at dequeue, and INT stamping (HPCC).

Each egress port has a high-priority queue (PFC/ACK/NACK when ACK_HIGH_PRIO) and the lossless
data queue (priority 3). MMU accounting is per ingress port for the data class, as in
``switch-mmu.cc``: ``reserve`` bytes per port, then the shared pool up to the dynamic threshold
``(buffer - headroom_total - reserve_total - shared_used) >> shift``, then headroom.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.core import (
    pkt_alloc,
    pkt_free,
    port_free,
    rand01,
    sw_kick,
    transmit,
)
from wormsim.netsim.packet.state import C_DROPS, C_ECN, MAXHOP, PK_DATA, PK_PFC
from wormsim.netsim.packet.wormhole import hooks
from wormsim.units import PS_PER_NS

__all__ = ["switch_receive", "switch_dequeue", "enqueue_hi", "release_lo"]


@njit(cache=True, inline="always")
def _shared_used(S, P, port):
    u = S.ing_bytes[port]
    return u - P.reserve if u > P.reserve else 0


@njit(cache=True, inline="always")
def _pfc_thresh(S, P, node, port):
    return (P.buffer - S.sw_fixed[node] - S.sw_shared[node]) >> S.pfc_shift[port]


@njit(cache=True, inline="always")
def enqueue_hi(S, port, p):
    """Append to a port's high-priority queue."""
    S.pk_next[p] = -1
    if S.qh_tail[port] >= 0:
        S.pk_next[S.qh_tail[port]] = p
    else:
        S.qh_head[port] = p
    S.qh_tail[port] = p
    S.qh_bytes[port] += S.pk_size[p]


@njit(cache=True, inline="always")
def _enqueue_lo(S, port, p):
    S.pk_next[p] = -1
    if S.ql_tail[port] >= 0:
        S.pk_next[S.ql_tail[port]] = p
    else:
        S.ql_head[port] = p
    S.ql_tail[port] = p
    S.ql_bytes[port] += S.pk_size[p]


@njit(cache=True)
def _send_pfc(S, P, port, pause, now):
    """Send a PFC pause (1) / resume (0) frame out of ``port`` (the data's ingress port).

    Callers pass typed values (``np.int64``, a state array's entry), not literals, so it compiles
    once."""
    p = pkt_alloc(S)
    S.pk_type[p] = PK_PFC
    S.pk_size[p] = P.pfc_bytes
    S.pk_cnp[p] = pause
    if port_free(S, port, now) and S.qh_head[port] < 0:
        # idle port: the frame goes out at once (same as DequeueAndTransmit in ns-3)
        S.tx_bytes[port] += P.pfc_bytes
        transmit(S, P, port, p, now)
    else:
        enqueue_hi(S, port, p)
        sw_kick(S, port, now)


@njit(cache=True)
def switch_receive(S, P, p, in_port, now):
    """A data/ACK/NACK packet arrived on ``in_port`` of a switch: admit, enqueue, maybe send."""
    if hooks.is_ghost(S, P, p):
        pkt_free(S, p)
        return
    node = S.p_node[in_port]
    S.pk_hop[p] += 1
    eg = S.r_ports[S.pk_route[p] + S.pk_hop[p]]
    size = S.pk_size[p]
    if hooks.packet_at_port(S, P, eg, p, now):
        return  # tunnelled past a skipped partition's frozen queue
    if S.pk_type[p] != PK_DATA and P.sw_ack_hi:
        enqueue_hi(S, eg, p)
    else:
        if P.pfc_on:
            hd = S.hdrm_bytes[in_port]
            thr = _pfc_thresh(S, P, node, in_port)
            if size + hd > S.headroom[in_port] and size + _shared_used(S, P, in_port) > thr:
                S.cnt[C_DROPS] += 1
                pkt_free(S, p)
                return
            new_bytes = S.ing_bytes[in_port] + size
            if new_bytes <= P.reserve:
                S.ing_bytes[in_port] = new_bytes
            elif new_bytes - P.reserve > thr:
                S.hdrm_bytes[in_port] += size
            else:
                S.ing_bytes[in_port] = new_bytes
                S.sw_shared[node] += min(size, new_bytes - P.reserve)
        else:
            if S.sw_used[node] + size > P.buffer:
                S.cnt[C_DROPS] += 1
                pkt_free(S, p)
                return
            S.sw_used[node] += size
        S.pk_inport[p] = in_port
        _enqueue_lo(S, eg, p)
        if P.pfc_on and S.pfc_on[in_port] == 0:
            if S.hdrm_bytes[in_port] > 0 or _shared_used(S, P, in_port) >= _pfc_thresh(
                S, P, node, in_port
            ):
                S.pfc_on[in_port] = 1
                calls.send_pfc(S, P, np.int64(in_port), S.pfc_on[in_port], now)
    tot = S.qh_bytes[eg] + S.ql_bytes[eg]
    if tot > S.peak_bytes[eg]:
        S.peak_bytes[eg] = tot
    if sw_kick(S, eg, now):
        calls.switch_dequeue(S, P, eg, now)


@njit(cache=True)
def release_lo(S, P, port, p, now):
    """Packet ``p``, just unlinked from ``port``'s data queue, leaves the switch's buffer: the
    queue's bytes, the ingress port's MMU accounting and, below the threshold again, its PFC
    resume."""
    size = S.pk_size[p]
    S.ql_bytes[port] -= size
    node = S.p_node[port]
    inp = S.pk_inport[p]
    if P.pfc_on:
        hd = S.hdrm_bytes[inp]
        from_hdrm = min(hd, size)
        ib = S.ing_bytes[inp]
        from_shared = min(size - from_hdrm, ib - P.reserve if ib > P.reserve else 0)
        S.hdrm_bytes[inp] = hd - from_hdrm
        S.ing_bytes[inp] = ib - (size - from_hdrm)
        S.sw_shared[node] -= from_shared
    else:
        S.sw_used[node] -= size
    if P.pfc_on and S.pfc_on[inp]:
        sh = _shared_used(S, P, inp)
        if S.hdrm_bytes[inp] == 0 and (
            sh == 0 or sh + P.resume_off <= _pfc_thresh(S, P, S.p_node[inp], inp)
        ):
            S.pfc_on[inp] = 0
            calls.send_pfc(S, P, np.int64(inp), S.pfc_on[inp], now)


@njit(cache=True)
def switch_dequeue(S, P, port, now):
    """Transmit the next packet of a switch port: high priority first, then unpaused data
    (a ghost packet, :func:`~.wormhole.hooks.is_ghost`, leaves the queue and the
    buffer without taking link time, and the next one is taken)."""
    while True:
        p = S.qh_head[port]
        if p >= 0:
            S.qh_head[port] = S.pk_next[p]
            if S.qh_head[port] < 0:
                S.qh_tail[port] = -1
            S.qh_bytes[port] -= S.pk_size[p]
            if hooks.is_ghost(S, P, p):
                pkt_free(S, p)
                continue
        else:
            if S.paused[port]:
                return
            p = S.ql_head[port]
            if p < 0:
                return
            S.ql_head[port] = S.pk_next[p]
            if S.ql_head[port] < 0:
                S.ql_tail[port] = -1
            release_lo(S, P, port, p, now)
            ghost = hooks.is_ghost(S, P, p)
            if P.ecn_on and S.pk_type[p] == PK_DATA and not ghost:
                eb = S.ql_bytes[port]
                if eb > S.kmax[port]:
                    S.pk_ecn[p] = 1
                    S.ecn_marked[port] += 1
                    S.cnt[C_ECN] += 1
                elif eb > S.kmin[port]:
                    prob = S.pmax[port] * (eb - S.kmin[port]) / (S.kmax[port] - S.kmin[port])
                    if rand01(S) < prob:
                        S.pk_ecn[p] = 1
                        S.ecn_marked[port] += 1
                        S.cnt[C_ECN] += 1
            if ghost:
                pkt_free(S, p)
                continue
            if P.int_stamp and S.pk_type[p] == PK_DATA:
                hooks.int_stamp(S, P, port, now)
                k = S.pk_nhop[p] % MAXHOP
                unit_b = 128 * P.int_multi
                unit_q = 80 * P.int_multi
                S.pk_it_ns[p, k] = (now // PS_PER_NS) & 0xFFFFFF
                S.pk_ib[p, k] = (S.tx_bytes[port] // unit_b) & 0xFFFFF
                S.pk_iq[p, k] = ((S.qh_bytes[port] + S.ql_bytes[port]) // unit_q) & 0x1FFFF
                S.pk_ir_bps[p, k] = S.p_rate_bps[port]
                S.pk_nhop[p] += 1
        S.tx_bytes[port] += S.pk_size[p]
        transmit(S, P, port, p, now)
        return
