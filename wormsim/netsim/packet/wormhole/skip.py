"""Moving a partition through time: shifts, byte credits, congestion-control state, replays.

The mechanics that fast-forward (:mod:`~.wh`), memo replays and shadow
partitions (:mod:`~.shadow`) share. A partition is moved by shifting its
pending events and the times its state carries (:func:`shift_partition`); its flows are
*credited* the bytes they would have sent (:func:`credit`: ``qp_size`` shrinks, so a flow
finishes that much earlier in its own sequence space); its congestion control is put at the rate
it would have reached or given another flow's state (the Wormhole hooks of
:mod:`~wormsim.netsim.packet.cc`).
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.cc import adopt_rate, cc_shift, restore_cc
from wormsim.netsim.packet.heap import collapse_events, shift_events
from wormsim.netsim.packet.state import C_NOW, C_WH_BYTES, C_WH_NACT, C_WH_SKIPS
from wormsim.netsim.packet.wormhole.fields import CC_STATE, PART_SKIPPED
from wormsim.netsim.packet.wormhole.tunnel import phantom_on, restamp
from wormsim.units import BPS_PER_BYTE_PER_PS, PS_PER_NS

__all__ = [
    "MEMO_LOOKUP",
    "MEMO_MISS",
    "MEMO_HIT",
    "MEMO_DONE",
    "MEMO_INSERT",
    "MEMO_WAIT",
    "PARK_PS",
    "route_end",
    "tail_margin",
    "shift_mask",
    "shift_marked",
    "collapse_marked",
    "shift_partition",
    "credit",
    "keep_credit",
    "skip",
    "plan_hit",
    "wh_apply_hit",
]

_M24 = (1 << 24) - 1

# memo status of a partition (``wh_memo[label]``)
MEMO_LOOKUP = 0  # formed: the driver must look its FCG up
MEMO_MISS = 1  # not in the store: snapshot the transient when the partition becomes steady
MEMO_HIT = 2  # a stored transient was replayed (skip-back interpolates it)
MEMO_DONE = 3  # nothing more to do (memo off, inserted, or a hit that did not fit)
MEMO_INSERT = 4  # steady after a miss: the driver must store the snapshot
MEMO_WAIT = 5  # a shadow: parked behind a leader (see the shadow module)

PARK_PS = 6 * 10**18
"""How far a shadow's events are moved: past any simulated time (the clock is bounded at
2.3e18 ps), so nothing of it fires until it is moved back."""


@njit(cache=True, inline="always")
def route_end(S, P, q):
    """End (in ``r_ports``) of the ports QP ``q`` counts in partitions: its data route, or its
    data and ACK routes (``partition_ports``)."""
    return S.r_off[2 * q + 1] if P.wh_data_only else S.r_off[2 * q + 2]


@njit(cache=True, inline="always")
def tail_margin(S, P, q, R):
    """Bytes a skip at rate ``R`` (bytes/ps) leaves QP ``q`` to finish packet by packet.

    max(``tail_rtts`` × its base RTT, ``tail_windows`` × the window span) at ``R``, and never less
    than its bytes in flight plus two payloads: :func:`credit` keeps one packet unsent, so a
    margin inside the flight (queues longer than the base RTT) would move the flow through more
    time than it is credited bytes for, and it would finish late.
    """
    margin = R * max(P.wh_margin_rtts * S.wh_rtt_ps[q], P.wh_margin_span * P.wh_span_ps)
    floor = S.qp_nxt[q] - S.qp_una[q] + 2 * P.mtu
    return margin if margin > floor else floor


@njit(cache=True)
def shift_mask(S, owner_mask, dt):
    """Shift every pending event whose owner is in ``owner_mask`` by ``dt`` ps (raw ``S``)."""
    now = S.cnt[C_NOW]
    for port in range(min(S.p_free_ps.shape[0], owner_mask.shape[0])):
        if owner_mask[port]:
            if S.p_free_ps[port] > now:
                S.p_free_ps[port] += dt  # a switch port's transmission in flight moves with it
            h = S.lk_head[port]
            if h >= 0:  # packets in flight behind the link's first (which is in the heap)
                p = S.pk_next[h]
                while p >= 0:
                    S.pk_at_ps[p] += dt
                    p = S.pk_next[p]
    return shift_events(S.cnt, S.ht_ps, S.hs, S.he, S.ho, owner_mask, dt)


@njit(cache=True)
def collapse_marked(S, mask, now):
    """Bring the ports ``mask[:n_ports]`` and QPs ``mask[n_ports:]`` to ``now`` as if their
    pending events had all happened by then: every later event of theirs, link arrival, switch
    busy time and NIC wake-up is moved to ``now``. For a parked group whose flows all finished
    with their leader (:func:`~wormsim.netsim.packet.wormhole.shadow.materialise`): its packets are
    ghosts, and in packet mode its ports would have drained them long before."""
    npt = S.p_free_ps.shape[0]
    for port in range(npt):
        if mask[port]:
            if S.ph_ack_ps[port] > now:
                S.ph_ack_ps[port] = now
            if S.nic_wake_ps[port] > now:
                S.nic_wake_ps[port] = now
            if S.p_free_ps[port] > now:
                S.p_free_ps[port] = now
            h = S.lk_head[port]
            if h >= 0:  # packets in flight behind the link's first (which is in the heap)
                p = S.pk_next[h]
                while p >= 0:
                    if S.pk_at_ps[p] > now:
                        S.pk_at_ps[p] = now
                    p = S.pk_next[p]
    for i in range(S.cnt[C_WH_NACT]):
        q = S.wh_act[i]
        if mask[npt + q] and S.qp_next_avail_ps[q] > now:
            S.qp_next_avail_ps[q] = now
    collapse_events(S.cnt, S.ht_ps, S.hs, S.he, S.ho, mask, now)


@njit(cache=True)
def shift_marked(S, P, mask, dt):
    """Move the ports ``mask[:n_ports]`` and QPs ``mask[n_ports:]`` by ``dt`` ps (a multiple of
    1 ns): their events, link FIFOs, switch busy times, NIC wake-ups, pacing times and the
    timestamps carried by their packets and their senders' INT history, so that CC sees no
    gap."""
    npt = S.p_free_ps.shape[0]
    dns = dt // PS_PER_NS
    for port in range(npt):
        if mask[port]:
            S.ph_ack_ps[port] += dt  # a skip's time holds no INT reading: nothing to count
            if S.nic_wake_ps[port] >= 0:
                S.nic_wake_ps[port] += dt
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
    for i in range(S.cnt[C_WH_NACT]):  # every QP with state to move is on the active list
        q = S.wh_act[i]
        if mask[npt + q]:
            S.qp_next_avail_ps[q] += dt
            S.rx_nack_ps[q] += dt
            cc_shift(S, P, q, dns)
    shift_mask(S, mask, dt)


@njit(cache=True)
def shift_partition(S, P, r, dt):
    """Move partition ``r`` (the ports labelled ``r`` and its QPs) by ``dt`` ps (see
    :func:`shift_marked`), in O(ports + active QPs + pending events): the owner mask is the
    state's scratch ``wh_mask``, cleared again after the shift."""
    npt = S.p_free_ps.shape[0]
    mask = S.wh_mask
    for port in range(npt):
        if S.wh_pport[port] == r:
            mask[port] = True
    for i in range(S.cnt[C_WH_NACT]):
        q = S.wh_act[i]
        if S.wh_lab[q] == r:
            mask[npt + q] = True
    shift_marked(S, P, mask, dt)
    for port in range(npt):
        mask[port] = False
    for i in range(S.cnt[C_WH_NACT]):
        mask[npt + S.wh_act[i]] = False


@njit(cache=True)
def credit(S, P, q, nbytes):
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
def keep_credit(S, P, q, kept):
    """A skip of QP ``q`` is rolled back: it keeps ``kept`` bytes of the skip's credit (whole
    payloads, at most the credit) and gets the rest back to send."""
    keep = int(kept) // P.mtu * P.mtu
    if keep > S.wh_cred[q]:
        keep = S.wh_cred[q]
    back = S.wh_cred[q] - keep
    S.qp_size[q] += back
    S.qp_credit[q] -= back
    S.cnt[C_WH_BYTES] -= back
    S.wh_cred[q] = keep


@njit(cache=True)
def skip(S, P, r, now, dti, total):
    """Shift partition ``r`` by ``dti`` and mark it skipped until ``now + dti``."""
    shift_partition(S, P, r, dti)
    S.wh_state[r] = PART_SKIPPED
    S.wh_t0_ps[r] = now
    S.wh_t1_ps[r] = now + dti
    phantom_on(S, P, r, now, now + dti)
    S.cnt[C_WH_SKIPS] += 1
    S.cnt[C_WH_BYTES] += total


@njit(cache=True)
def plan_hit(S, P, qs, sizef, rend, tconv):
    """How far a stored transient would move a partition that formed at this sampler tick.

    ``qs`` are its QPs, ``sizef``/``rend`` the stored bytes and end rates (bytes/ps) mapped onto
    them, ``tconv`` the stored transient (ps). The partition jumps over the transient *and* the
    steady run after it in one skip (paper §2 step 2: a hit goes straight to the steady logic):
    ΔT = T_conv + min_f (remaining_f − Size_f − margin_f) / R_f. Returns ``(dti, frac)``: the
    skip (ps, a multiple of 1 ns; 0 if the entry does not fit: some flow would finish within
    the replay) and the fraction of the transient replayed (1, or less for a partial replay).
    Changes nothing."""
    dt = 1e30
    for i in range(qs.shape[0]):
        q = qs[i]
        R = rend[i]
        if R <= 0.0:
            return 0, 1.0
        rem = S.qp_size[q] - S.qp_una[q]
        c = (rem - sizef[i] - tail_margin(S, P, q, R)) / R
        if c < dt:
            dt = c
    frac = 1.0
    if dt < 0:
        if not P.wh_partial:
            return 0, 1.0
        # partial replay: the transient up to where the flow with the least room stops its
        # tail margin short of its end (bytes interpolated over the transient, as skip-back does)
        for i in range(qs.shape[0]):
            q = qs[i]
            room = S.qp_size[q] - S.qp_una[q] - tail_margin(S, P, q, rend[i])
            if sizef[i] > 0 and room < frac * sizef[i]:
                frac = room / sizef[i]
        if frac <= 0.0:
            return 0, 1.0
        dti = (int(frac * tconv) // PS_PER_NS) * PS_PER_NS
    else:
        dti = (int(tconv + dt) // PS_PER_NS) * PS_PER_NS
        if dti < tconv:
            return 0, 1.0
    if dti < P.wh_min_skip_ps:
        return 0, 1.0
    return dti, frac


@njit(cache=True)
def wh_apply_hit(S, P, r, qs, sizef, rend, tconv, ccs, dti, frac):
    """Replay a stored transient on partition ``r`` over the skip ``dti`` that
    :func:`plan_hit` planned: flows are credited Size_f + R_f·(ΔT − T_conv) (a partial replay:
    Size_f in proportion to the time replayed) and their congestion controls take their state at
    the end of the transient (:func:`restore_cc`; an entry without it: R_f as their rate alone);
    queues, windows and in-flight packets stay as they were, as in fast-forward."""
    now = S.cnt[C_NOW]
    total = np.int64(0)  # typed, not a literal: skip() compiles once
    for i in range(qs.shape[0]):
        q = qs[i]
        R = rend[i]
        if frac < 1.0:
            total += credit(S, P, q, sizef[i] * (dti / tconv))
        else:
            total += credit(S, P, q, sizef[i] + R * (dti - tconv))
        if ccs.shape[1] == CC_STATE:  # the entry keeps the CC's state at the end of the transient
            restore_cc(S, P, q, ccs[i], now)
        else:
            adopt_rate(S, P, q, R * BPS_PER_BYTE_PER_PS, now)
        S.wh_rate_Bpps[q] = R
        S.wh_sizef[q] = sizef[i]
    skip(S, P, r, now, dti, total)
    S.wh_memo[r] = MEMO_HIT
    S.wh_tconv_ps[r] = tconv
