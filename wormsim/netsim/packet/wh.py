"""Wormhole kernels: partitions, steady detection, fast-forward and skip-back.

All of this runs inside :func:`~wormsim.netsim.packet.engine.run_kernel` and is inert unless
``P.wh_ps > 0`` (packet mode never calls it). The Python side and the decisions are described in
:mod:`wormsim.netsim.wormhole`.

State (per QP ``q``): ``wh_lab`` partition label (the smallest QP id of the component, -1 when
not active), ``wh_last`` acked bytes at the last sample, ``wh_ring``/``wh_n`` the window of
delivered-rate samples (bytes/ps; ``wh_n < 0`` = next sample only sets the baseline),
``wh_rtt`` base RTT (ps), ``wh_cred`` bytes credited by the current skip, ``wh_rate`` the rate
used by it, ``qp_credit`` total credited bytes. Per label ``r`` (indexed by the root QP):
``wh_psize`` members, ``wh_state`` (0 transient, 1 steady, 2 skipped or landed), ``wh_t0``,
``wh_t1`` skip start and end, ``wh_tform`` formation time, ``wh_memo`` memo status
(``MEMO_*``), ``wh_tconv`` the transient a memo hit replayed. Per QP for the memo:
``wh_una0``/``wh_r0`` acked bytes and sending rate (bit/s) when the partition formed,
``wh_sizef``/``wh_rend`` bytes sent in the transient and the steady rate (bytes/ps) it ended at
(a miss's snapshot at steady entry, or a hit's replayed values). Per port: ``wh_pport`` label.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from wormsim.netsim.packet.cc_dcqcn import dcqcn_set_rate
from wormsim.netsim.packet.heap import shift_events
from wormsim.netsim.packet.nic import change_rate
from wormsim.netsim.packet.state import (
    C_NOW,
    C_WH_BACKS,
    C_WH_BYTES,
    C_WH_DIRTY,
    C_WH_MEMO,
    C_WH_NACT,
    C_WH_NTP,
    C_WH_PARTS,
    C_WH_SKIPS,
    C_WH_STEADY,
    MAXHOP,
)
from wormsim.netsim.packet.tunnel import phantom_off, phantom_off_qp, phantom_on, restamp

__all__ = [
    "shift_mask",
    "wh_sample",
    "wh_on_start",
    "wh_partition",
    "wh_apply_hit",
    "wh_land",
    "MEMO_LOOKUP",
    "MEMO_MISS",
    "MEMO_HIT",
    "MEMO_DONE",
    "MEMO_INSERT",
]

_M24 = (1 << 24) - 1

# memo status of a partition (``wh_memo[label]``)
MEMO_LOOKUP = 0  # formed: the driver must look its FCG up
MEMO_MISS = 1  # not in the store: snapshot the transient when the partition becomes steady
MEMO_HIT = 2  # a stored transient was replayed (skip-back interpolates it)
MEMO_DONE = 3  # nothing more to do (memo off, inserted, or a hit that did not fit)
MEMO_INSERT = 4  # steady after a miss: the driver must store the snapshot


@njit(cache=True, inline="always")
def route_end(S, P, q):
    """End (in ``r_ports``) of the ports QP ``q`` counts in partitions: its data route, or its
    data and ACK routes (``partition_ports``)."""
    return S.r_off[2 * q + 1] if P.wh_data_only else S.r_off[2 * q + 2]


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
                restamp(S, p, dns)
                p = S.pk_next[p]
            p = S.qh_head[port]
            while p >= 0:
                restamp(S, p, dns)
                p = S.pk_next[p]
            p = S.ql_head[port]
            while p >= 0:
                restamp(S, p, dns)
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
    of their data and ACK routes, O(sum of their route lengths): only the active-QP list and the
    ports labelled by the previous pass are visited. Components whose member set changed get
    their windows reset and their state cleared."""
    act, par, size, flag, pown = S.wh_act, S.wh_par, S.wh_size, S.wh_flag, S.wh_pown
    # drop finished flows from the active list
    n = 0
    for i in range(S.cnt[C_WH_NACT]):
        q = act[i]
        if S.qp_done[q]:
            if P.wh_data_only:
                phantom_off_qp(S, q)
            S.wh_lab[q] = -1
        else:
            act[n] = q
            n += 1
    S.cnt[C_WH_NACT] = n
    for i in range(S.cnt[C_WH_NTP]):  # unlabel the ports of the previous pass
        S.wh_pport[S.wh_tp[i]] = -1
    for i in range(n):
        q = act[i]
        par[q] = q
        size[q] = 0
        flag[q] = 1  # "same members as before" until shown otherwise
    ntp = 0
    for i in range(n):
        q = act[i]
        for j in range(S.r_off[2 * q], route_end(S, P, q)):
            port = S.r_ports[j]
            o = pown[port]
            if o < 0:
                pown[port] = q
                S.wh_tp[ntp] = port
                ntp += 1
            else:
                a = _find(par, q)
                b = _find(par, o)
                if a < b:
                    par[b] = a
                elif b < a:
                    par[a] = b
    for i in range(n):
        q = act[i]
        r = _find(par, q)
        size[r] += 1
        if S.wh_lab[q] != r:
            flag[r] = 0
    for i in range(n):  # changed? decided for every component before any label moves
        q = act[i]
        if par[q] == q:
            flag[q] = 2 if (flag[q] == 0 or S.wh_psize[q] != size[q]) else 1
    for i in range(n):
        q = act[i]
        r = _find(par, q)
        if flag[r] != 2:
            continue
        if r == q:  # a new or changed partition
            S.wh_state[r] = 0
            S.wh_tform[r] = now
            S.wh_psize[r] = size[r]
            S.cnt[C_WH_PARTS] += 1
            if P.wh_memo_on:
                S.wh_memo[r] = MEMO_LOOKUP
                S.cnt[C_WH_MEMO] = 1
            else:
                S.wh_memo[r] = MEMO_DONE
        if P.wh_data_only:  # a changed partition is not skipped: no phantom ACKs left behind
            phantom_off_qp(S, q)
        if S.wh_lab[q] >= 0:  # a flow that started since the last pass keeps its start rate
            S.wh_r0[q] = S.qp_rate[q]
        S.wh_lab[q] = r
        S.wh_una0[q] = S.qp_una[q]
        S.wh_n[q] = -1
        S.wh_last[q] = S.qp_una[q]
        S.wh_tlast[q] = S.wh_tack[q]
    for i in range(ntp):
        port = S.wh_tp[i]
        S.wh_pport[port] = _find(par, pown[port])
        pown[port] = -1
    S.cnt[C_WH_NTP] = ntp


@njit(cache=True)
def _ring_test(ring, q, W, theta):
    """((max - min) / mean < theta, mean) of row ``q`` of a full sample ring."""
    lo = ring[q, 0]
    hi = lo
    sm = 0.0
    for k in range(W):
        v = ring[q, k]
        sm += v
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    mean = sm / W
    if mean <= 0.0:
        return False, 0.0
    return (hi - lo) / mean < theta, mean


@njit(cache=True)
def _window_stats(S, P, q):
    """(steady, mean delivered rate bytes/ps) of QP ``q``'s window: (max - min) / mean < theta
    on the detector's signal (delivered rate, or the congestion control's sending rate)."""
    W = P.wh_window
    if S.wh_n[q] < W:
        return False, 0.0
    steady, mean = _ring_test(S.wh_ring, q, W, P.wh_theta)
    if P.wh_signal > 0 or P.wh_gap > 0.0:
        st_cc, cc_mean = _ring_test(S.wh_cring, q, W, P.wh_theta)
        if P.wh_signal == 1:
            steady = st_cc
        elif P.wh_signal == 2:
            steady = steady and st_cc
        if steady and P.wh_gap > 0.0 and P.win == 0:
            # a rate-based sender (no window) sending faster than it delivers is building a
            # queue: not a steady state (a windowed sender's rate variable can sit above what
            # its window lets through, so the test does not apply to it)
            # (the NIC serves its flows round robin: a flow cannot send above its share)
            nic = S.qp_nic[q]
            sending = min(cc_mean, S.p_rate[nic] / max(S.nic_n[nic], 1))
            wire = mean * 8e12 * (P.mtu + P.hdr_bytes + P.int_bytes) / P.mtu
            steady = abs(sending - wire) < P.wh_gap * wire
    return steady, mean


@njit(cache=True)
def _credit(S, P, q, nbytes):
    """Credit QP ``q`` with ``nbytes`` rounded down to whole payloads, keeping at least one packet
    unsent; returns the credit."""
    mtu = P.mtu
    credit = int(nbytes) // mtu * mtu
    cap = ((S.qp_size[q] - S.qp_nxt[q]) // mtu - 1) * mtu
    if cap < 0:
        cap = 0
    if credit > cap:
        credit = cap
    S.wh_cred[q] = credit
    S.qp_size[q] -= credit
    S.qp_credit[q] += credit
    return credit


@njit(cache=True)
def _skip(S, P, r, now, dti, total):
    """Shift partition ``r`` by ``dti`` and mark it skipped until ``now + dti``."""
    _shift_partition(S, P, r, dti)
    S.wh_state[r] = 2
    S.wh_t0[r] = now
    S.wh_t1[r] = now + dti
    phantom_on(S, P, r, now, now + dti)
    S.cnt[C_WH_SKIPS] += 1
    S.cnt[C_WH_BYTES] += total


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
        margin = R * max(P.wh_margin_rtts * S.wh_rtt[q], P.wh_margin_span * span)
        c = (rem - margin) / R
        if c < dt:
            dt = c
    if dt < P.wh_min_skip:
        return False
    dti = (int(dt) // 1000) * 1000
    total = 0
    for q in range(nq):
        if S.wh_lab[q] == r:
            total += _credit(S, P, q, S.wh_rate[q] * dti)
    _skip(S, P, r, now, dti, total)
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
        if S.wh_memo[r] == MEMO_HIT:  # the replayed transient, then the steady rate
            tc = S.wh_tconv[r]
            if elapsed < tc:
                kept = S.wh_sizef[q] * (elapsed / tc)
            else:
                kept = S.wh_sizef[q] + S.wh_rate[q] * (elapsed - tc)
        else:
            kept = S.wh_rate[q] * elapsed
        keep = int(kept) // mtu * mtu
        if keep > S.wh_cred[q]:
            keep = S.wh_cred[q]
        back = S.wh_cred[q] - keep
        S.qp_size[q] += back
        S.qp_credit[q] -= back
        S.cnt[C_WH_BYTES] -= back
        S.wh_cred[q] = keep
    S.wh_t1[r] = now
    S.cnt[C_WH_BACKS] += 1
    phantom_off(S, P, r)


@njit(cache=True)
def wh_land(S, P, r, now):
    """A skipped partition reached the end of its skip (``EV_LAND``): drop its phantom load."""
    if S.wh_phend[r] == now:
        phantom_off(S, P, r)


@njit(cache=True)
def wh_on_start(S, P, q, now):
    """A network flow is released: skip back every skipped partition its routes touch."""
    S.cnt[C_WH_DIRTY] = 1
    S.wh_act[S.cnt[C_WH_NACT]] = q
    S.cnt[C_WH_NACT] += 1
    S.wh_r0[q] = S.qp_rate[q]  # FCG_start weight: the rate it starts at, whenever the pass runs
    for j in range(S.r_off[2 * q], route_end(S, P, q)):
        r = S.wh_pport[S.r_ports[j]]
        if r >= 0 and S.wh_state[r] == 2 and S.wh_t1[r] > now:
            _skip_back(S, P, r, now)


@njit(cache=True)
def wh_sample(S, P, now):
    """The Wormhole sampler: partitions if dirty, rate samples, steadiness, fast-forward."""
    if S.cnt[C_WH_DIRTY]:
        S.cnt[C_WH_DIRTY] = 0
        wh_partition(S, P, now)
    W = P.wh_window
    act, allst = S.wh_act, S.wh_flag  # flag: "every flow of the partition is steady"
    n = S.cnt[C_WH_NACT]
    for i in range(n):
        r = S.wh_lab[act[i]]
        if r >= 0:
            allst[r] = 1
    any_active = False
    for i in range(n):
        q = act[i]
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
            allst[r] = 0
            continue
        # bytes acked between the last ACKs of two sample periods over the exact time between
        # those ACKs: no quantization to whole packets per period
        S.wh_ring[q, S.wh_n[q] % W] = d / el if el > 0 else 0.0
        S.wh_cring[q, S.wh_n[q] % W] = S.qp_rate[q]
        S.wh_n[q] += 1
        st, _ = _window_stats(S, P, q)
        if not st:
            allst[r] = 0
    if not any_active:
        return
    for i in range(n):
        r = act[i]
        if S.wh_lab[r] != r or S.wh_state[r] == 2 or not allst[r]:
            continue
        if S.wh_state[r] == 0:
            S.wh_state[r] = 1
            S.cnt[C_WH_STEADY] += 1
            if S.wh_memo[r] == MEMO_MISS:
                _snapshot_transient(S, P, r, now)
        if P.wh_ff:
            _fast_forward(S, P, r, now)


@njit(cache=True)
def _snapshot_transient(S, P, r, now):
    """A missed partition just became steady: keep T_conv, Size_f and the end rates for the
    driver to store (``FCG_end`` is taken at steady entry)."""
    S.wh_tconv[r] = now - S.wh_tform[r]
    for q in range(S.qp_size.shape[0]):
        if S.wh_lab[q] == r:
            S.wh_sizef[q] = S.qp_una[q] - S.wh_una0[q]
            _, rate = _window_stats(S, P, q)
            S.wh_rend[q] = rate
    S.wh_memo[r] = MEMO_INSERT
    S.cnt[C_WH_MEMO] = 1


@njit(cache=True)
def wh_apply_hit(S, P, r, qs, sizef, rend, tconv):
    """Replay a stored transient on partition ``r`` that formed at this sampler tick.

    ``qs`` are its QPs, ``sizef``/``rend`` the stored bytes and end rates (bytes/ps) mapped onto
    them, ``tconv`` the stored transient (ps). The partition jumps over the transient *and* the
    steady run after it in one skip (paper §2 step 2: a hit goes straight to the steady logic):
    ΔT = T_conv + min_f (remaining_f − Size_f − margin_f) / R_f, flows are credited
    Size_f + R_f·(ΔT − T_conv) and their congestion controls adopt R_f as their rate (
    HPCC's reference rate, TIMELY's rate; DCQCN keeps its target and restarts its increase
    timer; queues, windows and in-flight packets stay as they were, as in fast-forward).
    Returns False, changing nothing, if some flow would finish within the replay (the entry
    does not fit).
    """
    now = S.cnt[C_NOW]
    span = P.wh_span
    dt = 1e30
    for i in range(qs.shape[0]):
        q = qs[i]
        R = rend[i]
        if R <= 0.0:
            return False
        rem = S.qp_size[q] - S.qp_una[q]
        margin = R * max(P.wh_margin_rtts * S.wh_rtt[q], P.wh_margin_span * span)
        c = (rem - sizef[i] - margin) / R
        if c < dt:
            dt = c
    frac = 1.0
    if dt < 0:
        if not P.wh_partial:
            return False
        # partial replay: the transient up to where the flow with the least room stops its
        # tail margin short of its end (bytes interpolated over the transient, as skip-back does)
        frac = 1.0
        for i in range(qs.shape[0]):
            q = qs[i]
            margin = rend[i] * max(P.wh_margin_rtts * S.wh_rtt[q], P.wh_margin_span * span)
            room = S.qp_size[q] - S.qp_una[q] - margin
            if sizef[i] > 0 and room < frac * sizef[i]:
                frac = room / sizef[i]
        if frac <= 0.0:
            return False
        dti = (int(frac * tconv) // 1000) * 1000
        if dti < P.wh_min_skip:
            return False
    else:
        dti = (int(tconv + dt) // 1000) * 1000
        if dti < tconv or dti < P.wh_min_skip:
            return False
    total = 0
    for i in range(qs.shape[0]):
        q = qs[i]
        R = rend[i]
        if frac < 1.0:
            total += _credit(S, P, q, sizef[i] * (dti / tconv))
        else:
            total += _credit(S, P, q, sizef[i] + R * (dti - tconv))
        rate = min(max(R * 8e12, P.min_rate), S.qp_max[q])
        if P.cc == 1:
            dcqcn_set_rate(S, P, q, rate, now)
        change_rate(S, P, q, rate, now)
        S.h_cur[q] = rate  # HPCC's reference rate
        S.h_inc[q] = 0
        S.t_cur[q] = rate  # TIMELY's
        # DCQCN keeps its target rate (its memory of the rate before the cut) and restarts its
        # rate-increase timer (see dcqcn_set_rate)
        S.wh_rate[q] = R
        S.wh_sizef[q] = sizef[i]
    _skip(S, P, r, now, dti, total)
    S.wh_memo[r] = MEMO_HIT
    S.wh_tconv[r] = tconv
    return True
