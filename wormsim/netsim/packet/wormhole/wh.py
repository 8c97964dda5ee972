"""Wormhole kernels: partitions, steady detection, fast-forward and skip-back.

All of this runs inside :func:`~wormsim.netsim.packet.engine.run_kernel`, called through the
hooks (:mod:`.hooks`) only when ``P.wh_ps > 0`` (packet mode never calls it). The Python side
and the decisions are described in :mod:`wormsim.netsim.wormhole.counters`.

State: the rows of the "Wormhole" group of :mod:`.fields` (per QP, per partition label ``r`` =
the smallest QP id of the partition, per port). Delivered
rates are bytes/ps (``_Bpps``, so that credited bytes = rate × ps); the congestion controls'
rates are bit/s (``_bps``).
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.cc import save_cc
from wormsim.netsim.packet.core import push
from wormsim.netsim.packet.state import (
    C_FS_LIVE,
    C_WH_BACKS,
    C_WH_DIRTY,
    C_WH_HOLDS,
    C_WH_IDLE,
    C_WH_LIVE,
    C_WH_MEMO,
    C_WH_MEMO_PAUSE,
    C_WH_NACT,
    C_WH_NTP,
    C_WH_PARTS,
    C_WH_STEADY,
    EV_WH,
)
from wormsim.netsim.packet.wormhole import calls as wh_calls
from wormsim.netsim.packet.wormhole.fairness import patient_partition_converged
from wormsim.netsim.packet.wormhole.fields import PART_SKIPPED, PART_STEADY, PART_TRANSIENT
from wormsim.netsim.packet.wormhole.partition import find_root, union_ports
from wormsim.netsim.packet.wormhole.shadow import (
    hold,
)
from wormsim.netsim.packet.wormhole.skip import (
    MEMO_DONE,
    MEMO_HIT,
    MEMO_INSERT,
    MEMO_LOOKUP,
    MEMO_MISS,
    MEMO_WAIT,
    PARK_PS,
    credit,
    keep_credit,
    route_end,
    shift_partition,
    skip,
    tail_margin,
)
from wormsim.netsim.packet.wormhole.steady import newest_half_mean, sample_rates, window_stats
from wormsim.netsim.packet.wormhole.tunnel import phantom_off, phantom_off_qp, shadow_phantoms
from wormsim.units import PS_PER_NS

__all__ = [
    "wh_sample",
    "wh_on_start",
    "wh_on_finish",
    "wh_partition",
    "wh_land",
]


@njit(cache=True)
def wh_partition(S, P, now):
    """Recompute the partitions from scratch: union-find of the active QPs over the directed ports
    of their data and ACK routes, O(sum of their route lengths): only the active-QP list and the
    ports labelled by the previous pass are visited. Components whose member set changed get
    their windows reset and their state cleared."""
    act, par, size, flag, pown = S.wh_act, S.wh_par, S.wh_size, S.wh_flag, S.wh_pown
    # drop finished flows from the active list
    n = np.int64(0)  # typed, not a literal: union_ports compiles once
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
        size[q] = 0
        flag[q] = 1  # "same members as before" until shown otherwise
    ntp = union_ports(act, n, S.r_off, S.r_ports, P.wh_data_only, par, pown, S.wh_tp)
    for i in range(n):
        q = act[i]
        r = find_root(par, q)
        size[r] += 1
        if S.wh_lab[q] != r:
            flag[r] = 0
    for i in range(n):  # changed? decided for every component before any label moves
        q = act[i]
        if par[q] == q:
            flag[q] = 2 if (flag[q] == 0 or S.wh_psize[q] != size[q]) else 1
    for i in range(n):  # 3: changed, with shadow (parked or held) members
        q = act[i]
        if S.wh_qgrp[q] >= 0:
            r = find_root(par, q)
            if flag[r] == 2:
                flag[r] = 3
    for i in range(n):
        q = act[i]
        r = find_root(par, q)
        if flag[r] < 2:
            continue
        if r == q:  # a new or changed partition
            S.wh_state[r] = PART_TRANSIENT
            S.wh_tform_ps[r] = now
            S.wh_psize[r] = size[r]
            S.cnt[C_WH_PARTS] += 1
            if P.wh_memo_on and (flag[r] == 3 or S.cnt[C_WH_MEMO_PAUSE] == 0):
                S.wh_memo[r] = MEMO_LOOKUP
                S.cnt[C_WH_MEMO] = 1
            else:  # memo off, or paused by the bridge (a re-formed shadow is always served)
                if P.wh_memo_on:
                    S.cnt[C_WH_MEMO_PAUSE] -= 1
                S.wh_memo[r] = MEMO_DONE
            if flag[r] == 3:  # still parked: the bridge remaps or materialises it
                S.wh_state[r] = PART_SKIPPED
                S.wh_t1_ps[r] = now + PARK_PS
        if P.wh_data_only:  # a changed partition is not skipped: no phantom ACKs left behind
            phantom_off_qp(S, q)
        if S.wh_lab[q] >= 0:  # a flow that started since the last pass keeps its start rate
            S.wh_r0_bps[q] = S.qp_rate_bps[q]
        S.wh_lab[q] = r
        S.wh_una0[q] = S.qp_una[q]
        S.wh_n[q] = -1
        S.wh_last[q] = S.qp_una[q]
        S.wh_tlast_ps[q] = S.wh_tack_ps[q]
    for i in range(ntp):
        port = S.wh_tp[i]
        S.wh_pport[port] = find_root(par, pown[port])
        pown[port] = -1
    S.cnt[C_WH_NTP] = ntp
    if P.wh_memo_on:
        wh_calls.release_orphans(S, P, now)


@njit(cache=True)
def _fast_forward(S, P, r, now):
    """Skip steady partition ``r`` ahead (returns True if it did)."""
    dt = 1e30
    act = S.wh_act
    n = S.cnt[C_WH_NACT]
    for i in range(n):
        q = act[i]
        if S.wh_lab[q] != r:
            continue
        R = newest_half_mean(S.wh_ring_Bpps, q, P.wh_window, S.wh_n[q])
        S.wh_rate_Bpps[q] = R
        rem = S.qp_size[q] - S.qp_una[q]
        c = (rem - tail_margin(S, P, q, R)) / R
        if c < dt:
            dt = c
    if dt < P.wh_min_skip_ps:
        return False
    dti = (int(dt) // PS_PER_NS) * PS_PER_NS
    total = np.int64(0)  # typed, not a literal: skip() compiles once
    for i in range(n):
        q = act[i]
        if S.wh_lab[q] == r:
            total += credit(S, P, q, S.wh_rate_Bpps[q] * dti)
    wh_calls.release_foreign(S, P, r, now)  # other partitions' ACKs on its ports do not wait for it
    skip(S, P, r, now, dti, total)
    return True


@njit(cache=True)
def _skip_back(S, P, r, now):
    """Roll skipped partition ``r`` back to ``now`` (a flow touching it was released)."""
    rem = (S.wh_t1_ps[r] - now) // PS_PER_NS * PS_PER_NS
    if rem > 0:
        shift_partition(S, P, r, -rem)
    elapsed = S.wh_t1_ps[r] - rem - S.wh_t0_ps[r]
    for i in range(S.cnt[C_WH_NACT]):  # a partition's QPs are all on the active list
        q = S.wh_act[i]
        if S.wh_lab[q] != r:
            continue
        if S.wh_memo[r] == MEMO_HIT:  # the replayed transient, then the steady rate
            tc = S.wh_tconv_ps[r]
            if elapsed < tc:
                kept = S.wh_sizef[q] * (elapsed / tc)
            else:
                kept = S.wh_sizef[q] + S.wh_rate_Bpps[q] * (elapsed - tc)
        else:
            kept = S.wh_rate_Bpps[q] * elapsed
        keep_credit(S, P, q, kept)
    S.wh_t1_ps[r] = now
    S.cnt[C_WH_BACKS] += 1
    phantom_off(S, P, r)


@njit(cache=True)
def wh_land(S, P, r, now):
    """A skipped partition reached the end of its skip (``EV_LAND``): drop its phantom load."""
    if S.wh_phend_ps[r] == now:
        phantom_off(S, P, r)


@njit(cache=True)
def sampler_needed(S):
    """Whether the sampler has work at its next tick: active flows (skipped or not), parked
    shadow groups, flows skipped alone, or partitions to recompute."""
    return (
        S.cnt[C_WH_NACT] > 0 or S.cnt[C_WH_LIVE] > 0 or S.cnt[C_FS_LIVE] > 0
        or S.cnt[C_WH_DIRTY] > 0
    )  # fmt: skip


@njit(cache=True)
def wake_sampler(S, P, now):
    """Restart the sleeping sampler on its grid of ticks (multiples of the period): at ``now``
    if ``now`` is on it (after the event being handled, as the tick it replaces would run after
    an event scheduled before it), else at the next tick. Ticks through time without network
    flows (compute phases, the 2 s before an HPCC scenario's flows) did nothing but cost an
    event each."""
    S.cnt[C_WH_IDLE] = 0
    t = now if now % P.wh_ps == 0 else (now // P.wh_ps + 1) * P.wh_ps
    push(S, t, EV_WH, 0, -1)


@njit(cache=True)
def wh_on_start(S, P, q, now):
    """A network flow is released: wake the sampler if it sleeps, skip back every skipped
    partition its routes touch (with flow skips: every skipped flow sharing a port of its data
    route)."""
    if S.cnt[C_WH_IDLE]:
        wake_sampler(S, P, now)
    if P.wh_flow:
        wh_calls.fs_on_start(S, P, q, now)
        return
    S.cnt[C_WH_DIRTY] = 1
    S.wh_act[S.cnt[C_WH_NACT]] = q
    S.cnt[C_WH_NACT] += 1
    S.wh_r0_bps[q] = S.qp_rate_bps[
        q
    ]  # FCG_start weight: the rate it starts at, whenever the pass runs
    for j in range(S.r_off[2 * q], route_end(S, P, q)):
        r = S.wh_pport[S.r_ports[j]]
        if r < 0:
            continue
        if S.wh_qgrp[r] >= 0 and (S.wh_memo[r] == MEMO_WAIT or S.wh_memo[r] == MEMO_LOOKUP):
            if not S.wh_hold[q]:  # onto a shadow: held until it is remapped or materialised
                hold(S, q, r, now)
                S.cnt[C_WH_HOLDS] += 1
        elif S.wh_state[r] == PART_SKIPPED and S.wh_t1_ps[r] > now:
            _skip_back(S, P, r, now)
    for j in range(S.r_off[2 * q], route_end(S, P, q)):  # after the hold: ports of other groups
        if S.wh_pgrp[S.r_ports[j]] >= 0:
            wh_calls.unpark_foreign(S, P, np.int64(S.r_ports[j]), q)


@njit(cache=True)
def wh_on_pause(S, P, port, now):
    """A PFC pause reached ``port``: note when, for the steadiness test, which refuses a window
    in which a pause reached a flow's data route (:func:`~.steady.paused_in_window`)."""
    S.wh_pause_ps[port] = now


@njit(cache=True)
def wh_on_finish(S, P, q, now):
    """Network flow ``q`` finished: the partitions are to be recomputed; with flow skips, every
    skip sharing a port of its data route ends (its bottleneck changed); shadow QPs mirroring it
    finish with it (:func:`~.shadow.finish_mirrors`)."""
    S.cnt[C_WH_DIRTY] = 1
    if P.wh_flow:
        wh_calls.fs_on_change(S, P, np.int64(q), now)
    if S.wh_mhead[q] >= 0:
        wh_calls.finish_mirrors(S, P, q, now)


@njit(cache=True)
def wh_sample(S, P, now):
    """The Wormhole sampler: partitions if dirty, rate samples, steadiness, fast-forward."""
    if P.wh_flow:
        wh_calls.fs_sample(S, P, now)
        return
    if S.cnt[C_WH_DIRTY]:
        S.cnt[C_WH_DIRTY] = 0
        wh_calls.wh_partition(S, P, now)
    shadow_phantoms(S, P, now)
    # flag: "every flow of the partition is steady" (2: and one of them after its patience)
    act, allst = S.wh_act, S.wh_flag
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
        if S.wh_state[r] == PART_SKIPPED:
            continue  # skipped (frozen) or landed: runs packet by packet until it changes
        any_active = True
        if not sample_rates(S, P, q):
            allst[r] = 0
            continue
        st, _ = window_stats(S, P, q)
        if not st:
            allst[r] = 0
        elif allst[r] == 1 and P.wh_patience > 0 and S.wh_n[q] >= P.wh_patience:
            allst[r] = 2  # steady, one flow after its patience: the fair-share gate decides
    if not any_active:
        return
    for i in range(n):
        r = act[i]
        if S.wh_lab[r] != r or S.wh_state[r] == PART_SKIPPED or not allst[r]:
            continue
        if allst[r] == 2 and not patient_partition_converged(S, P, r):
            continue
        if S.wh_state[r] == PART_TRANSIENT:
            S.wh_state[r] = PART_STEADY
            S.cnt[C_WH_STEADY] += 1
            wh_calls.steady_entry(S, P, r, now)
        if P.wh_ff:
            _fast_forward(S, P, r, now)


@njit(cache=True)
def _steady_entry(S, P, r, now):
    """Partition ``r`` just became steady: its end rates (means of the windows' newest halves);
    after a miss, the snapshot the driver stores (``T_conv``, ``Size_f``, the CC's state;
    ``FCG_end`` is taken here)."""
    for i in range(S.cnt[C_WH_NACT]):
        q = S.wh_act[i]
        if S.wh_lab[q] == r:
            S.wh_rend_Bpps[q] = newest_half_mean(S.wh_ring_Bpps, q, P.wh_window, S.wh_n[q])
            if S.wh_memo[r] == MEMO_MISS:
                S.wh_sizef[q] = S.qp_una[q] - S.wh_una0[q]
                save_cc(S, P, q, S.wh_ccs[q])
    if S.wh_memo[r] == MEMO_MISS:
        S.wh_tconv_ps[r] = now - S.wh_tform_ps[r]
        S.wh_memo[r] = MEMO_INSERT
        S.cnt[C_WH_MEMO] = 1
