"""Output-queued switch with a shared buffer, ns-3's dynamic PFC threshold and headroom, RED/ECN
marking at dequeue, and INT stamping (HPCC).

Each egress port has a high-priority queue (PFC/ACK/NACK when ACK_HIGH_PRIO) and the lossless
data queue (priority 3). MMU accounting is per ingress port for the data class, as in
``switch-mmu.cc``: ``reserve`` bytes per port, then the shared pool up to the dynamic threshold
``(buffer - headroom_total - reserve_total - shared_used) >> shift``, then headroom.
"""

from __future__ import annotations

from numba import njit

from wormsim.netsim.packet.cc import cc_stamps_int
from wormsim.netsim.packet.core import (
    is_ghost,
    pkt_alloc,
    pkt_free,
    port_free,
    rand01,
    settle_ack,
    sw_kick,
    transmit,
)
from wormsim.netsim.packet.heap import heap_push_seq
from wormsim.netsim.packet.state import (
    C_DROPS,
    C_ECN,
    C_HEAPN,
    C_WH_RELEASED,
    EV_ARRIVE,
    EV_TUNNEL,
    MAXHOP,
    PART_SKIPPED,
    PK_DATA,
    PK_PFC,
)
from wormsim.netsim.packet.wormhole.flowphantom import settle
from wormsim.netsim.packet.wormhole.shadow import unpark_foreign
from wormsim.netsim.packet.wormhole.tunnel import frozen_for, tunnel

__all__ = ["switch_receive", "switch_dequeue", "enqueue_hi", "release_lo", "release_foreign"]


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
    """Send a PFC pause (1) / resume (0) frame out of ``port`` (the data's ingress port)."""
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
    if is_ghost(S, P, p):
        pkt_free(S, p)
        return
    node = S.p_node[in_port]
    S.pk_hop[p] += 1
    eg = S.r_ports[S.pk_route[p] + S.pk_hop[p]]
    size = S.pk_size[p]
    if S.pk_type[p] != PK_DATA and frozen_for(S, P, eg, S.pk_flow[p], now):
        tunnel(S, P, eg, p, now)  # a skipped partition's port: pass its frozen queue
        return
    if P.wh_ps > 0 and S.wh_pgrp[eg] >= 0:
        unpark_foreign(S, P, eg, S.pk_flow[p])
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
                _send_pfc(S, P, in_port, 1, now)
    tot = S.qh_bytes[eg] + S.ql_bytes[eg]
    if tot > S.peak_bytes[eg]:
        S.peak_bytes[eg] = tot
    if sw_kick(S, eg, now):
        switch_dequeue(S, P, eg, now)


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
            _send_pfc(S, P, inp, 0, now)


@njit(cache=True)
def switch_dequeue(S, P, port, now):
    """Transmit the next packet of a switch port: high priority first, then unpaused data
    (a ghost packet, :func:`~wormsim.netsim.packet.core.is_ghost`, leaves the queue and the
    buffer without taking link time, and the next one is taken)."""
    while True:
        p = S.qh_head[port]
        if p >= 0:
            S.qh_head[port] = S.pk_next[p]
            if S.qh_head[port] < 0:
                S.qh_tail[port] = -1
            S.qh_bytes[port] -= S.pk_size[p]
            if is_ghost(S, P, p):
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
            ghost = is_ghost(S, P, p)
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
            if cc_stamps_int(P) and S.pk_type[p] == PK_DATA:
                if P.wh_flow:
                    settle(S, port, now)  # skipped flows' phantom bytes up to now
                if P.wh_data_only:  # skipped and parked flows' ACK bytes up to now
                    if S.ph_rate_bps[port] > 0.0:
                        settle_ack(S, port, now)
                    elif S.ph_ack_t[port] < now:  # no load: the clock only follows, no call
                        S.ph_ack_t[port] = now
                k = S.pk_nhop[p] % MAXHOP
                unit_b = 128 * P.int_multi
                unit_q = 80 * P.int_multi
                S.pk_it[p, k] = (now // 1000) & 0xFFFFFF
                S.pk_ib[p, k] = (S.tx_bytes[port] // unit_b) & 0xFFFFF
                S.pk_iq[p, k] = ((S.qh_bytes[port] + S.ql_bytes[port]) // unit_q) & 0x1FFFF
                S.pk_ir_bps[p, k] = S.p_rate_bps[port]
                S.pk_nhop[p] += 1
        S.tx_bytes[port] += S.pk_size[p]
        transmit(S, P, port, p, now)
        return


@njit(cache=True, inline="always")
def _foreign(S, p, r):
    """Whether packet ``p`` belongs to a flow outside partition ``r`` that must not wait for it:
    not a PFC frame (it reflects the queues it was sent for), not a packet of a parked shadow
    group (it keeps the time it was parked with). A skipped or replayed flow's packets on
    another partition's port count: a skip moves only its own ports, so they were never moved,
    and parked with ``r`` they waited for ``r``'s group to come back (MoE 32x22B/1024 at 1 %
    message size: a replayed leader's last ACK 294 µs late, its 46 shadows with it)."""
    if S.pk_type[p] == PK_PFC:
        return False
    lab = S.wh_lab[S.pk_flow[p]]
    return lab != r and (lab < 0 or S.wh_state[lab] != PART_SKIPPED or S.wh_qgrp[lab] < 0)


@njit(cache=True)
def _release_queue(S, P, r, port, low, now):
    """Take the packets foreign to partition ``r`` out of ``port``'s data queue (``low``) or
    high-priority queue, out of the buffer, and tunnel them past the port."""
    head = S.ql_head if low else S.qh_head
    tail = S.ql_tail if low else S.qh_tail
    prev = -1
    p = head[port]
    while p >= 0:
        nxt = S.pk_next[p]
        if _foreign(S, p, r):
            if prev < 0:
                head[port] = nxt
            else:
                S.pk_next[prev] = nxt
            if tail[port] == p:
                tail[port] = prev
            if low:
                release_lo(S, P, port, p, now)
            else:
                S.qh_bytes[port] -= S.pk_size[p]
            tunnel(S, P, port, p, now)
            S.cnt[C_WH_RELEASED] += 1
        else:
            prev = p
        p = nxt


@njit(cache=True)
def release_foreign(S, P, r, now):
    """Before the ports of partition ``r`` (``wh_pport == r``) are frozen (skipped, replayed or
    parked), take out the packets of flows running elsewhere that they hold (:func:`_foreign`),
    so that none waits for the skip to end or the group to come back.

    With data-port partitions only control packets (ACKs, NACKs, CNPs) of other partitions
    cross these ports. Those waiting in a port's queue leave the buffer and are tunnelled past it
    (:func:`~.wormhole.tunnel.tunnel`); those already on the port's link keep their
    arrival time (the link's first packet, whose arrival is in the heap, has that event turned in
    place into a tunnel event, same time and sequence number, so the heap stays valid). Parked
    with the port, a leader's ACK in flight on its shadow's NIC link waited for the shadow, which
    waited for the leader to finish (GPT-175B/1024 at 1 % message size)."""
    if not P.wh_data_only:
        return
    npt = S.p_free.shape[0]
    for port in range(npt):
        if S.wh_pport[port] != r:
            continue
        _release_queue(S, P, r, port, False, now)
        if S.p_sw[port]:  # control packets share the data queue unless ACK_HIGH_PRIO
            _release_queue(S, P, r, port, True, now)
        h = S.lk_head[port]
        if h < 0:
            continue
        prev = h
        p = S.pk_next[h]
        while p >= 0:  # behind the first: out of the list, arriving when they would have
            nxt = S.pk_next[p]
            if _foreign(S, p, r):
                S.pk_next[prev] = nxt
                if S.lk_tail[port] == p:
                    S.lk_tail[port] = prev
                S.pk_inport[p] = port
                heap_push_seq(S.cnt, S.ht, S.hs, S.he, S.ho, S.pk_at[p], S.pk_as[p],
                              EV_TUNNEL | (p << 8), -1)  # fmt: skip
                S.cnt[C_WH_RELEASED] += 1
            else:
                prev = p
            p = nxt
        if _foreign(S, h, r):
            code = EV_ARRIVE | (h << 8)
            for i in range(S.cnt[C_HEAPN]):
                if S.he[i] == code and S.ho[i] == port:
                    S.he[i] = EV_TUNNEL | (h << 8)
                    S.ho[i] = -1
                    break
            S.pk_inport[h] = port
            S.cnt[C_WH_RELEASED] += 1
            nx = S.pk_next[h]
            S.lk_head[port] = nx
            if nx < 0:
                S.lk_tail[port] = -1
            else:  # the next packet in flight becomes the link's first, in the heap
                heap_push_seq(S.cnt, S.ht, S.hs, S.he, S.ho, S.pk_at[nx], S.pk_as[nx],
                              EV_ARRIVE | (nx << 8), port)  # fmt: skip
