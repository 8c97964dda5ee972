"""Control packets around skipped partitions (Wormhole with data-port partitions).

With ``partition_ports="data"`` a partition owns the egress ports its flows' *data* uses; the
ACKs, NACKs and CNPs of other partitions still cross those ports. While a partition is skipped
its ports are frozen (their events shifted into the future), so a foreign control packet reaching
one is *tunnelled*: it arrives at the port's peer after the frozen queue's drain time, its own
serialization and the link delay, as it would behind a queue in the steady state the skip
extrapolates, without entering the frozen queue. Conversely a control packet reaching the sender
of a skipped flow was sent before the skip and is *deferred* by the skip's shift, exactly as the
flow's own events were, with its timestamps moved by the time it was held.

A skipped flow sends no packets, so its ACKs vanish from the ports of its ACK route, which belong
to other partitions: those would speed up by the ACK load (about 6 % of the flow's rate with
1000-byte payloads and 60-byte ACKs). While a partition is skipped each of its flows therefore
puts a *phantom* load of R·ack_bytes/payload on every port of its ACK route
(:func:`phantom_on`, removed at landing or skip-back by :func:`phantom_off`): a packet sent on a
port with phantom load φ takes 1/(1 − φ'/rate) of its serialization time, φ' the share of the link
the real ACKs would hold (their serialization time in whole nanoseconds, as packet mode sends
them), and the port's INT byte counter advances by the phantom bytes of that time, so HPCC sees
the same utilisation (:func:`~.phantom.phantom_tx`).
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.core import push, tx_ps_port
from wormsim.netsim.packet.state import (
    C_WH_DEFERS,
    C_WH_LIVE,
    C_WH_NACT,
    C_WH_TUNNELS,
    EV_DEFER,
    EV_LAND,
    EV_TUNNEL,
    MAXHOP,
)
from wormsim.netsim.packet.wormhole.fields import HOLD_WAITING, PART_SKIPPED
from wormsim.netsim.packet.wormhole.phantom import ack_load
from wormsim.units import BPS_PER_BYTE_PER_PS, PS_PER_NS

__all__ = [
    "frozen_for",
    "tunnel",
    "defer_if_skipped",
    "receive_deferred",
    "restamp",
    "phantom_on",
    "phantom_load",
    "phantom_on_qp",
    "phantom_off",
    "phantom_off_qp",
    "shadow_phantoms",
    "shadow_phantom_qp",
]

_M24 = (1 << 24) - 1


@njit(cache=True, inline="always")
def frozen_for(S, P, port, q, now):
    """Whether ``port`` is frozen by a skipped partition other than QP ``q``'s."""
    if not P.wh_data_only:
        return False
    r = S.wh_pport[port]
    return r >= 0 and S.wh_lab[q] != r and S.wh_state[r] == PART_SKIPPED and S.wh_t1_ps[r] > now


@njit(cache=True)
def tunnel(S, P, port, p, now):
    """Deliver control packet ``p`` across frozen ``port`` to its peer (never shifted): it waits
    for the port's frozen queues and its own serialization."""
    wait = S.qh_bytes[port] + S.ql_bytes[port] + S.pk_size[p]
    t = now + tx_ps_port(P, wait, S.p_rate_bps[port]) + S.p_delay_ps[port]
    S.pk_inport[p] = port
    push(S, t, EV_TUNNEL, p, -1)
    S.cnt[C_WH_TUNNELS] += 1


@njit(cache=True, inline="always")
def restamp(S, p, dns):
    """Move the timestamps packet ``p`` carries by ``dns`` ns (its send time and INT)."""
    S.pk_ts_ns[p] += dns
    for k in range(min(S.pk_nhop[p], MAXHOP)):
        S.pk_it_ns[p, k] = (S.pk_it_ns[p, k] + dns) & _M24


@njit(cache=True)
def defer_if_skipped(S, P, p, now):
    """Hold a control packet for a QP whose partition is skipped; True if held."""
    if not P.wh_data_only:
        return False
    q = S.pk_flow[p]
    r = S.wh_lab[q]
    if r < 0 or S.wh_state[r] != PART_SKIPPED or S.wh_t1_ps[r] <= now:
        return False
    S.pk_at_ps[p] = now
    push(S, now + (S.wh_t1_ps[r] - S.wh_t0_ps[r]), EV_DEFER, p, P.n_ports + q)
    S.cnt[C_WH_DEFERS] += 1
    return True


@njit(cache=True)
def receive_deferred(S, P, p, now):
    """``EV_DEFER``: control packet ``p``, held for a skipped QP, is due: its timestamps move by
    the time it was held, and its sender receives it."""
    restamp(S, p, (now - S.pk_at_ps[p]) // PS_PER_NS)
    calls.receive_ack(S, P, p, now)


@njit(cache=True)
def phantom_on(S, P, r, now, end):
    """Partition ``r`` is skipped until ``end``: load its flows' ACK routes with their ACKs."""
    if not P.wh_data_only:
        return
    phantom_load(S, P, r)
    S.wh_phend_ps[r] = end
    push(S, end, EV_LAND, r, -1)


@njit(cache=True)
def phantom_load(S, P, r):
    """Load partition ``r``'s flows' ACK routes with their ACKs at ``wh_rate_Bpps`` (no landing)."""
    if not P.wh_data_only:
        return
    for i in range(S.cnt[C_WH_NACT]):
        q = S.wh_act[i]
        if S.wh_lab[q] == r:
            phantom_on_qp(S, P, q)


@njit(cache=True)
def phantom_on_qp(S, P, q):
    """Load QP ``q``'s ACK route with its ACKs at ``wh_rate_Bpps`` (no-op if loaded)."""
    if S.wh_phq_bps[q] > 0.0:
        return
    bps = S.wh_rate_Bpps[q] * BPS_PER_BYTE_PER_PS * (P.ack_bytes / max(P.mtu, P.ack_interval))
    S.wh_phq_bps[q] = bps
    for j in range(S.r_off[2 * q + 1], S.r_off[2 * q + 2]):
        ack_load(S, S.r_ports[j], 0.0, bps)


@njit(cache=True)
def phantom_off_qp(S, q):
    """Remove QP ``q``'s phantom ACK load (if any) from the ports of its ACK route."""
    if S.wh_phq_bps[q] == 0.0:
        return
    for j in range(S.r_off[2 * q + 1], S.r_off[2 * q + 2]):
        ack_load(S, S.r_ports[j], S.wh_phq_bps[q], 0.0)
    S.wh_phq_bps[q] = 0.0


@njit(cache=True)
def phantom_off(S, P, r):
    """Partition ``r`` landed or was rolled back: its ACKs are real packets again."""
    if not P.wh_data_only:
        return
    S.wh_phend_ps[r] = -1
    for i in range(S.cnt[C_WH_NACT]):
        q = S.wh_act[i]
        if S.wh_lab[q] == r:
            phantom_off_qp(S, q)


@njit(cache=True)
def _leader_rate_bps(S, P, m, now):
    """What leader QP ``m`` sends now, bit/s: its skip's steady rate while its partition is
    skipped, else its last delivered-rate sample, else (no sample yet) its congestion control's
    rate, capped at its NIC's round-robin share (two channel flows on one NIC each start at
    line rate by their CC and send half of it)."""
    r = S.wh_lab[m]
    if S.qp_done[m]:
        return 0.0
    if r >= 0 and S.wh_state[r] == PART_SKIPPED and S.wh_t1_ps[r] > now and S.wh_rate_Bpps[m] > 0.0:
        return S.wh_rate_Bpps[m] * BPS_PER_BYTE_PER_PS
    k = S.wh_n[m]
    if k > 0:
        return S.wh_ring_Bpps[m, (k - 1) % P.wh_window] * BPS_PER_BYTE_PER_PS
    nic = S.qp_nic[m]
    return min(S.qp_rate_bps[m], S.p_rate_bps[nic] / max(S.nic_n[nic], 1))


@njit(cache=True)
def shadow_phantoms(S, P, now):
    """Give every parked shadow QP the phantom ACK load of the leader QP it mirrors, at the
    leader's current rate (called every sampler tick with data-port partitions).

    A shadow sends no packets, so the ACKs its flows would return vanish from the ports of their
    ACK routes, and those ports carry other partitions' data: in a data-parallel ring each flow's
    uplink also carries the ACKs of the flow into it, and that flow's pair on another rail may be
    the leader being simulated. Without this load the leader ran 6.5 % fast; with a load frozen at
    the start rate (line rate) it ran 9.9 % slow (GPT-13B/128)."""
    if not P.wh_data_only or S.cnt[C_WH_LIVE] == 0:
        return
    for i in range(S.cnt[C_WH_NACT]):
        shadow_phantom_qp(S, P, S.wh_act[i], now)


@njit(cache=True)
def shadow_phantom_qp(S, P, q, now):
    """Set shadow QP ``q``'s phantom ACK load to its leader's current rate (no-op otherwise)."""
    m = S.wh_mapq[q]
    if S.wh_qgrp[q] < 0 or m < 0 or S.wh_hold[q] == HOLD_WAITING or S.qp_done[q]:
        return
    bps = _leader_rate_bps(S, P, m, now) * P.ack_bytes / max(P.mtu, P.ack_interval)
    old = S.wh_phq_bps[q]
    if bps == old:
        return
    for j in range(S.r_off[2 * q + 1], S.r_off[2 * q + 2]):
        ack_load(S, S.r_ports[j], old, bps)
    S.wh_phq_bps[q] = bps
