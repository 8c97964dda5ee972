"""Wormhole kernels: partitions, steady detection, fast-forward and skip-back (DESIGN §5).

All of this runs inside :func:`~wormsim.netsim.packet.engine.run_kernel` and is inert unless
``P.wh_ps > 0`` (packet mode never calls it). The Python side and the decisions are described in
:mod:`wormsim.netsim.wormhole`.

State (per QP ``q``): ``wh_lab`` partition label (the smallest QP id of the component, -1 when
not active), ``wh_last`` acked bytes at the last sample, ``wh_ring``/``wh_n`` the window of
delivered-rate samples (bytes/ps; ``wh_n < 0`` = next sample only sets the baseline),
``wh_rtt`` base RTT (ps), ``wh_cred`` bytes credited by the current skip, ``wh_rate`` the rate
used by it, ``qp_credit`` total credited bytes. Per label ``r`` (indexed by the root QP):
``wh_psize`` members, ``wh_state`` (0 transient, 1 steady, 2 skipped or landed), ``wh_t0``,
``wh_t1`` skip start and end, ``wh_tform`` formation time. Per port: ``wh_pport`` label.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wormsim.netsim.packet.heap import shift_events
from wormsim.netsim.packet.state import (
    C_NOW,
    C_WH_BACKS,
    C_WH_BYTES,
    C_WH_DIRTY,
    C_WH_PARTS,
    C_WH_SKIPS,
    C_WH_STEADY,
    MAXHOP,
)

__all__ = ["shift_mask", "wh_sample", "wh_on_start", "wh_partition"]

_M24 = (1 << 24) - 1


@njit(cache=True)
def shift_mask(S, owner_mask, dt):
    """Shift every pending event whose owner is in ``owner_mask`` by ``dt`` ps (raw ``S``)."""
    now = S.cnt[C_NOW]
    for port in range(min(S.p_free.shape[0], owner_mask.shape[0])):
        if owner_mask[port]:
            if S.p_free[port] > now:
                S.p_free[port] += dt  # a switch port's transmission in flight moves with it
            h = S.lk_head[port]
            if h >= 0:  # packets in flight behind the link's first (which is in the heap)
                p = S.pk_next[h]
                while p >= 0:
                    S.pk_at[p] += dt
                    p = S.pk_next[p]
    return shift_events(S.cnt, S.ht, S.hs, S.he, S.ho, owner_mask, dt)


@njit(cache=True, inline="always")
def _stamp_pkt(S, p, dns):
    S.pk_ts[p] += dns
    for k in range(min(S.pk_nhop[p], MAXHOP)):
        S.pk_it[p, k] = (S.pk_it[p, k] + dns) & _M24


@njit(cache=True)
def _shift_partition(S, P, r, dt):
    """Move partition ``r`` (ports labelled ``r`` and its QPs) by ``dt`` ps (multiple of 1 ns):
    events, link FIFOs, switch busy times, NIC wake-ups, pacing times and the timestamps carried
    by its packets and its senders' INT history, so that CC sees no gap."""
    npt = S.p_free.shape[0]
    nq = S.qp_size.shape[0]
    dns = dt // 1000
    mask = np.zeros(npt + nq, np.bool_)
    for port in range(npt):
        if S.wh_pport[port] == r:
            mask[port] = True
            if S.nic_wake_t[port] >= 0:
                S.nic_wake_t[port] += dt
            p = S.lk_head[port]
            while p >= 0:
                _stamp_pkt(S, p, dns)
                p = S.pk_next[p]
            p = S.qh_head[port]
            while p >= 0:
                _stamp_pkt(S, p, dns)
                p = S.pk_next[p]
            p = S.ql_head[port]
            while p >= 0:
                _stamp_pkt(S, p, dns)
                p = S.pk_next[p]
    for q in range(nq):
        if S.wh_lab[q] == r:
            mask[npt + q] = True
            S.qp_next_avail[q] += dt
            S.rx_nack_t[q] += dt
            for k in range(MAXHOP):
                S.h_t[q, k] = (S.h_t[q, k] + dns) & _M24
    shift_mask(S, mask, dt)


@njit(cache=True)
def _find(par, x):
    while par[x] != x:
        par[x] = par[par[x]]
        x = par[x]
    return x


@njit(cache=True)
def wh_partition(S, P, now):
    """Recompute the partitions from scratch: union-find of the active QPs over the directed ports
    of their data and ACK routes, O(sum of route lengths + ports). Components whose member set
    changed get their windows reset and their state cleared."""
    nq = S.qp_size.shape[0]
    npt = S.p_free.shape[0]
    par = np.arange(nq)
    pown = np.full(npt, -1, np.int64)
    for q in range(nq):
        if S.qp_start[q] < 0 or S.qp_done[q]:
            continue
        for j in range(S.r_off[2 * q], S.r_off[2 * q + 2]):
            port = S.r_ports[j]
            o = pown[port]
            if o < 0:
                pown[port] = q
            else:
                a = _find(par, q)
                b = _find(par, o)
                if a < b:
                    par[b] = a
                elif b < a:
                    par[a] = b
    size = np.zeros(nq, np.int64)
    same = np.ones(nq, np.bool_)
    for q in range(nq):
        if S.qp_start[q] < 0 or S.qp_done[q]:
            continue
        r = _find(par, q)
        size[r] += 1
        if S.wh_lab[q] != r:
            same[r] = False
    for q in range(nq):
        if S.qp_start[q] < 0 or S.qp_done[q]:
            S.wh_lab[q] = -1
            continue
        r = _find(par, q)
        if same[r] and S.wh_psize[r] == size[r]:
            continue
        if r == q:  # a new or changed partition
            S.wh_state[r] = 0
            S.wh_tform[r] = now
            S.wh_psize[r] = size[r]
            S.cnt[C_WH_PARTS] += 1
        S.wh_lab[q] = r
        S.wh_n[q] = -1
        S.wh_last[q] = S.qp_una[q]
        S.wh_tlast[q] = S.wh_tack[q]
    for port in range(npt):
        o = pown[port]
        S.wh_pport[port] = _find(par, o) if o >= 0 else -1


@njit(cache=True)
def _window_stats(S, P, q):
    """(steady, mean rate bytes/ps) of QP ``q``'s window: (max - min) / mean < theta."""
    W = P.wh_window
    if S.wh_n[q] < W:
        return False, 0.0
    lo = S.wh_ring[q, 0]
    hi = lo
    sm = 0.0
    for k in range(W):
        v = S.wh_ring[q, k]
        sm += v
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    mean = sm / W
    if mean <= 0.0:
        return False, 0.0
    return (hi - lo) / mean < P.wh_theta, mean


@njit(cache=True)
def _fast_forward(S, P, r, now):
    """Skip steady partition ``r`` ahead (returns True if it did)."""
    nq = S.qp_size.shape[0]
    span = P.wh_span
    dt = 1e30
    for q in range(nq):
        if S.wh_lab[q] != r:
            continue
        _, R = _window_stats(S, P, q)
        S.wh_rate[q] = R
        rem = S.qp_size[q] - S.qp_una[q]
        margin = R * max(4 * S.wh_rtt[q], 2 * span)
        c = (rem - margin) / R
        if c < dt:
            dt = c
    if dt < P.wh_min_skip:
        return False
    dti = (int(dt) // 1000) * 1000
    mtu = P.mtu
    total = 0
    for q in range(nq):
        if S.wh_lab[q] != r:
            continue
        credit = int(S.wh_rate[q] * dti) // mtu * mtu
        cap = ((S.qp_size[q] - S.qp_nxt[q]) // mtu - 1) * mtu
        if cap < 0:
            cap = 0
        if credit > cap:
            credit = cap
        S.wh_cred[q] = credit
        S.qp_size[q] -= credit
        S.qp_credit[q] += credit
        total += credit
    _shift_partition(S, P, r, dti)
    S.wh_state[r] = 2
    S.wh_t0[r] = now
    S.wh_t1[r] = now + dti
    S.cnt[C_WH_SKIPS] += 1
    S.cnt[C_WH_BYTES] += total
    return True


@njit(cache=True)
def _skip_back(S, P, r, now):
    """Roll skipped partition ``r`` back to ``now`` (a flow touching it was released)."""
    rem = (S.wh_t1[r] - now) // 1000 * 1000
    if rem > 0:
        _shift_partition(S, P, r, -rem)
    elapsed = S.wh_t1[r] - rem - S.wh_t0[r]
    mtu = P.mtu
    for q in range(S.qp_size.shape[0]):
        if S.wh_lab[q] != r:
            continue
        keep = int(S.wh_rate[q] * elapsed) // mtu * mtu
        if keep > S.wh_cred[q]:
            keep = S.wh_cred[q]
        back = S.wh_cred[q] - keep
        S.qp_size[q] += back
        S.qp_credit[q] -= back
        S.cnt[C_WH_BYTES] -= back
        S.wh_cred[q] = keep
    S.wh_t1[r] = now
    S.cnt[C_WH_BACKS] += 1


@njit(cache=True)
def wh_on_start(S, P, q, now):
    """A network flow is released: skip back every skipped partition its routes touch."""
    S.cnt[C_WH_DIRTY] = 1
    for j in range(S.r_off[2 * q], S.r_off[2 * q + 2]):
        r = S.wh_pport[S.r_ports[j]]
        if r >= 0 and S.wh_state[r] == 2 and S.wh_t1[r] > now:
            _skip_back(S, P, r, now)


@njit(cache=True)
def wh_sample(S, P, now):
    """The Wormhole sampler: partitions if dirty, rate samples, steadiness, fast-forward."""
    if S.cnt[C_WH_DIRTY]:
        S.cnt[C_WH_DIRTY] = 0
        wh_partition(S, P, now)
    nq = S.qp_size.shape[0]
    W = P.wh_window
    allst = np.ones(nq, np.bool_)
    any_active = False
    for q in range(nq):
        r = S.wh_lab[q]
        if r < 0:
            continue
        if S.wh_state[r] == 2:
            continue  # skipped (frozen) or landed: runs packet by packet until it changes
        any_active = True
        d = S.qp_una[q] - S.wh_last[q]
        el = S.wh_tack[q] - S.wh_tlast[q]
        S.wh_last[q] = S.qp_una[q]
        S.wh_tlast[q] = S.wh_tack[q]
        if S.wh_n[q] < 0:
            S.wh_n[q] = 0
            allst[r] = False
            continue
        # bytes acked between the last ACKs of two sample periods over the exact time between
        # those ACKs: no quantization to whole packets per period
        S.wh_ring[q, S.wh_n[q] % W] = d / el if el > 0 else 0.0
        S.wh_n[q] += 1
        st, _ = _window_stats(S, P, q)
        if not st:
            allst[r] = False
    if not any_active:
        return
    for r in range(nq):
        if S.wh_lab[r] != r or S.wh_state[r] == 2 or not allst[r]:
            continue
        if S.wh_state[r] == 0:
            S.wh_state[r] = 1
            S.cnt[C_WH_STEADY] += 1
        if P.wh_ff:
            _fast_forward(S, P, r, now)
