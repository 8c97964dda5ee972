"""Host NIC: per-QP rate limiter and window, round-robin among ready QPs, high-priority ACK queue.

Mirrors ``RdmaEgressQueue``/``QbbNetDevice::DequeueAndTransmit`` of HPCC ns-3: the ACK queue goes
first (unless PFC pauses its class), then QPs round-robin from the last one served; a QP is ready
when it has bytes left, is not window-bound and its pacing time ``next_avail`` has come. If none is
ready, a wake-up is scheduled at the earliest ``next_avail``.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.core import pkt_alloc, push, transmit, tx_ps_rate
from wormsim.netsim.packet.state import C_DATA_SENT, EV_NICWAKE, PK_DATA
from wormsim.units import PS_PER_NS

__all__ = ["nic_dequeue", "qp_window", "change_rate", "nic_update_next_avail", "NEVER"]

_INF = 1 << 62
NEVER = _INF
"""A pacing time (``qp_next_avail_ps``) that keeps a QP from being sent and from waking its NIC."""


@njit(cache=True, inline="always")
def qp_window(S, P, q):
    """Current window in bytes (0 = none), as ``RdmaQueuePair::GetWin``."""
    w = S.qp_win[q]
    if w == 0:
        return 0
    if P.var_win:
        w = int(w * int(S.qp_rate_bps[q]) // int(S.qp_max_bps[q]))
        if w == 0:
            w = 1
    return w


@njit(cache=True)
def _schedule_wake(S, port, t):
    S.nic_wake_g[port] += 1
    S.nic_wake_ps[port] = t
    push(S, t, EV_NICWAKE, (S.nic_wake_g[port] << 24) | port, port)


@njit(cache=True)
def nic_update_next_avail(S, port, t, now):
    """``QbbNetDevice::UpdateNextAvail``: pull a pending wake-up earlier."""
    if S.nic_wake_ps[port] >= 0 and t < S.nic_wake_ps[port]:
        _schedule_wake(S, port, t if t > now else now)


@njit(cache=True)
def change_rate(S, P, q, new_rate, now):
    """``RdmaHw::ChangeRate``: shift ``next_avail`` by the pacing-time difference, set the rate
    (a QP held at ``NEVER``, a skipped flow, stays there: its ACKs in flight still move its
    rate)."""
    ls = S.qp_last_size[q]
    if ls > 0 and S.qp_next_avail_ps[q] != NEVER:
        old = tx_ps_rate(P, ls, S.qp_rate_bps[q])
        new = tx_ps_rate(P, ls, new_rate)
        S.qp_next_avail_ps[q] += new - old
        nic_update_next_avail(S, S.qp_nic[q], S.qp_next_avail_ps[q], now)
    S.qp_rate_bps[q] = new_rate


@njit(cache=True)
def nic_dequeue(S, P, port, now):
    """Send the next packet of a host NIC if it is idle."""
    if S.p_busy[port]:
        return
    paused = S.paused[port]
    p = S.qh_head[port]
    if p >= 0 and (P.ack_hi or not paused):
        S.qh_head[port] = S.pk_next[p]
        if S.qh_head[port] < 0:
            S.qh_tail[port] = -1
        S.qh_bytes[port] -= S.pk_size[p]
        transmit(S, P, port, p, now)
        return
    base = S.nic_off[port]
    n = S.nic_n[port]
    rr = S.nic_rr[port]
    res = -1
    min_fin = -1
    for i in range(1, n + 1):
        idx = (i + rr) % n
        q = S.nic_qps[base + idx]
        left = S.qp_size[q] - S.qp_nxt[q]
        if not paused and left > 0:
            w = qp_window(S, P, q)
            if not (w != 0 and S.qp_nxt[q] - S.qp_una[q] >= w):
                if S.qp_next_avail_ps[q] > now:
                    continue
                res = idx
                break
        if S.qp_una[q] >= S.qp_size[q]:
            if min_fin < 0 or idx < min_fin:
                min_fin = idx
    if min_fin >= 0:
        nxt = min_fin
        for i in range(min_fin + 1, n):
            q = S.nic_qps[base + i]
            if S.qp_una[q] < S.qp_size[q]:
                if i == res:
                    res = nxt
                S.nic_qps[base + nxt] = q
                nxt += 1
        S.nic_n[port] = nxt
    if res >= 0:
        S.nic_rr[port] = res
        q = S.nic_qps[base + res]
        payload = S.qp_size[q] - S.qp_nxt[q]
        if payload > P.mtu:
            payload = P.mtu
        p = pkt_alloc(S)
        S.pk_type[p] = PK_DATA
        S.pk_flow[p] = q
        S.pk_seq[p] = S.qp_nxt[q]
        S.pk_payload[p] = payload
        size = payload + P.hdr_bytes + P.int_bytes
        S.pk_size[p] = size
        S.pk_route[p] = S.qp_rdata[q]
        S.pk_hop[p] = 0
        S.pk_ts_ns[p] = now // PS_PER_NS
        S.qp_nxt[q] += payload
        transmit(S, P, port, p, now)
        S.cnt[C_DATA_SENT] += 1
        S.qp_last_size[q] = size
        r = S.qp_rate_bps[q] if P.rate_bound else S.qp_max_bps[q]
        S.qp_next_avail_ps[q] = now + tx_ps_rate(P, size, r)
    else:
        t = np.int64(_INF)  # typed, not a literal: _schedule_wake compiles once
        for i in range(S.nic_n[port]):
            q = S.nic_qps[base + i]
            if S.qp_size[q] - S.qp_nxt[q] > 0 and S.qp_next_avail_ps[q] < t:
                t = S.qp_next_avail_ps[q]
        if S.nic_wake_ps[port] < 0 and t < _INF and t > now:
            _schedule_wake(S, port, t)
