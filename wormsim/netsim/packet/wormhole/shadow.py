"""Shadow partitions: partitions that mirror an identical one instead of being simulated.

Partitions that form at the same sampler tick with the same labelled Flow Conflict Graph and the
same remaining bytes per flow (the bridge decides: :class:`~wormsim.netsim.wormhole.bridge.
MemoBridge`) will run the same course until something touches one and not the others: the
data-parallel rings of a pipeline stage, one per tensor-parallel rank, are the common case. The
first is simulated (the *leader*); the others become *shadows* of it: their pending events are
moved :data:`~.skip.PARK_PS` into the future, so none of their packets is
simulated, and each of their QPs records the leader QP it mirrors.

A shadow is a lazily evaluated copy of its leader. Its *group* (``wh_qgrp``/``wh_pgrp``, the
QPs and ports whose events are parked, with the park time ``wh_gt0_ps``) keeps, per QP, the bytes
its leader QP has acked since it was mapped (``qp_una[wh_mapq] - wh_lu0``, plus ``wh_vcred``
carried over from earlier leaders). While it is parked:

* a leader flow finishing finishes its shadow flows at the same instant (the rest of their bytes
  credited; :func:`finish_mirrors`), so the DAG releases the same
  next flows on both sides at the same time;
* a flow released onto a shadow's ports is *held* (it sends nothing); at the next partition pass
  the leader and the shadow both re-form, and if the shadow, with held flows matched to the
  leader's new flows by start time and size, still has the leader's labelled FCG and remaining
  bytes, it is *remapped* onto the re-formed leader and stays parked (:func:`remap`);
* the leader may be fast-forwarded or replay a memo hit: its credited bytes count as progress
  (a skip under way in proportion to the time it has run), and the shadow stays parked, so its
  flows still finish with the leader's when its tail has run;
* if the leader changes in a way the shadow does not mirror, or the shadow's re-formed pattern
  no longer matches, the shadow is *materialised* (moved back to now, every QP credited its
  leader's progress and given its leader's congestion-control state) and simulated on its own
  from there (:func:`materialise`). Its queues and packets in flight are those it had when it
  was parked: the same approximation as a memo hit's.

Held flows that are never matched start when their shadow is materialised, later than they were
released by at most one sampler period.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.dlist import dl_push, dl_unlink
from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.cc import cc_on_finish, copy_cc
from wormsim.netsim.packet.nic import NEVER, nic_update_next_avail
from wormsim.netsim.packet.state import (
    C_NOW,
    C_WH_BYTES,
    C_WH_DIRTY,
    C_WH_EMPTIED,
    C_WH_LIVE,
    C_WH_MIRRORED,
    C_WH_NACT,
    C_WH_ORPHANS,
    C_WH_PARKED,
    C_WH_PORTS_BACK,
    C_WH_REMAPS,
    C_WH_SHADOW_BYTES,
    C_WH_UNPARKED,
    PK_PFC,
)
from wormsim.netsim.packet.wormhole import calls as wh_calls
from wormsim.netsim.packet.wormhole.fields import (
    HOLD_FREE,
    HOLD_REMAPPED,
    HOLD_WAITING,
    PART_SKIPPED,
    PART_TRANSIENT,
)
from wormsim.netsim.packet.wormhole.skip import (
    MEMO_DONE,
    MEMO_WAIT,
    PARK_PS,
    collapse_marked,
    credit,
    shift_marked,
)
from wormsim.netsim.packet.wormhole.tunnel import phantom_off, shadow_phantom_qp
from wormsim.units import PS_PER_NS

__all__ = [
    "park",
    "remap",
    "hold",
    "materialise",
    "release_orphans",
    "mirror_group",
    "unpark_foreign",
    "finish_mirrors",
    "is_ghost",
]


@njit(cache=True, inline="always")
def _progress(S, m, now):
    """Bytes leader QP ``m`` has done by ``now``: acked, plus credited by skips and replays (the
    credit of a skip still under way counted in proportion to the time it has run)."""
    done = S.qp_una[m] + S.qp_credit[m]
    r = S.wh_lab[m]
    if (
        r >= 0
        and S.wh_state[r] == PART_SKIPPED
        and S.wh_t1_ps[r] > now
        and S.wh_memo[r] != MEMO_WAIT
    ):
        done -= int(S.wh_cred[m] * ((S.wh_t1_ps[r] - now) / (S.wh_t1_ps[r] - S.wh_t0_ps[r])))
    return done


@njit(cache=True)
def _chain(S, q, m, first):
    """Record that QP ``q`` mirrors leader QP ``m`` (``first``: ``m``'s chain starts empty)."""
    if first:
        S.wh_mhead[m] = -1
    S.wh_mnext[q] = S.wh_mhead[m]
    S.wh_mhead[m] = q
    S.wh_mapq[q] = m


@njit(cache=True, inline="always")
def _join(S, q, g):
    """Make QP ``q`` a member of parked group ``g`` (leaving the group it was in, if any): the
    members are a doubly linked list, so a group is walked in O(its size), never O(QPs)."""
    old = S.wh_qgrp[q]
    if old == g:
        return
    if old >= 0:
        _leave(S, q)
    dl_push(S.wh_ghead, S.wh_gprev, S.wh_gnext, g, q)
    S.wh_qgrp[q] = g


@njit(cache=True, inline="always")
def _leave(S, q):
    """Take QP ``q`` out of its parked group's member list."""
    dl_unlink(S.wh_ghead, S.wh_gprev, S.wh_gnext, S.wh_qgrp[q], q)
    S.wh_gnext[q] = -1
    S.wh_gprev[q] = -1
    S.wh_qgrp[q] = -1


@njit(cache=True)
def park(S, P, f, lead, qs, leads, first):
    """Make partition ``f`` (QPs ``qs``) a shadow of leader ``lead`` (``leads[i]`` mirrors
    ``qs[i]``), parking its events; ``first``: the leader's first shadow at this tick."""
    now = S.cnt[C_NOW]
    g = f
    npt = S.p_free_ps.shape[0]
    mask = S.wh_mask
    for port in range(npt):
        if S.wh_pport[port] == f:
            S.wh_pgrp[port] = g
            mask[port] = True
    for i in range(qs.shape[0]):
        q = qs[i]
        m = leads[i]
        _chain(S, q, m, first)
        _join(S, q, g)
        S.wh_lu0[q] = _progress(S, m, now)
        S.wh_vcred[q] = 0
        S.wh_cred[q] = 0
        mask[npt + q] = True
    S.wh_gt0_ps[g] = now
    S.wh_glive[g] = qs.shape[0]
    S.cnt[C_WH_LIVE] += 1
    shift_marked(S, P, mask, np.int64(PARK_PS))
    _clear_mask(S, mask, qs)
    _mark_shadow(S, f, lead, now)
    if P.wh_data_only:  # its flows' ACKs, at their leaders' rates (kept so every sampler tick)
        for i in range(qs.shape[0]):
            shadow_phantom_qp(S, P, qs[i], now)
    S.cnt[C_WH_PARKED] += 1


@njit(cache=True, inline="always")
def _clear_mask(S, mask, qs):
    """Reset the scratch owner mask after a shift of the ports and QPs ``qs`` it marked."""
    npt = S.p_free_ps.shape[0]
    for port in range(npt):
        mask[port] = False
    for i in range(qs.shape[0]):
        mask[npt + qs[i]] = False


@njit(cache=True)
def _mark_shadow(S, r, lead, now):
    S.wh_lead[r] = lead
    S.wh_memo[r] = MEMO_WAIT
    S.wh_state[r] = PART_SKIPPED
    S.wh_t0_ps[r] = now  # the leader's formation time: it is the same partition while this holds
    S.wh_t1_ps[r] = now + PARK_PS


@njit(cache=True)
def remap(S, P, r, g, lead, qs, leads, first):
    """Keep re-formed shadow ``r`` (parked group ``g`` plus held flows) parked as a shadow of
    re-formed leader ``lead``: ``leads[i]`` mirrors ``qs[i]`` from now on."""
    now = S.cnt[C_NOW]
    for i in range(qs.shape[0]):
        q = qs[i]
        m = leads[i]
        if S.wh_hold[q] == HOLD_WAITING:
            # released onto the shadow with leader flow m: it starts as m did, a member now,
            # still without packets (it sends once materialised)
            S.wh_hold[q] = HOLD_REMAPPED
            S.wh_vcred[q] = 0
            S.wh_lu0[q] = 0
            S.wh_glive[g] += 1
        else:
            old = S.wh_mapq[q]
            S.wh_vcred[q] += _progress(S, old, now) - S.wh_lu0[q]
            S.wh_lu0[q] = _progress(S, m, now)
        _join(S, q, g)
        _chain(S, q, m, first)
    _mark_shadow(S, r, lead, now)
    S.cnt[C_WH_REMAPS] += 1


@njit(cache=True)
def hold(S, q, r, now):
    """Flow ``q`` was released onto shadow ``r``: it sends nothing (its NIC never picks it, and
    schedules no wake-up for it) until ``r`` is remapped or materialised."""
    S.wh_hold[q] = HOLD_WAITING
    _join(S, q, S.wh_qgrp[r])
    S.qp_next_avail_ps[q] = NEVER


@njit(cache=True, inline="always")
def _parked_for(S, g, now):
    """How long group ``g`` has been parked, rounded up to whole ns so that no event moved back
    by it lands before ``now``."""
    return -(-(now - S.wh_gt0_ps[g]) // PS_PER_NS) * PS_PER_NS


@njit(cache=True)
def materialise(S, P, g, now):
    """Move parked group ``g`` back to ``now``: its events by the time since it was parked, each
    unfinished QP credited its leader's progress and given its leader's congestion-control state
    (:func:`~wormsim.netsim.packet.cc.copy_cc`); held flows start now. Its partitions run
    packet by packet from here.

    A group whose flows all finished with their leader has only ghost packets left, which packet
    mode would have drained long before: its events are all brought to ``now``
    (:func:`~.skip.collapse_marked`) rather than resumed where they were
    parked, so that its ports are free for the next flows at once (resumed, a packet on the wire
    at the park held the port up to one serialization time: the next step's flows started up to
    84 ns late, 0.4 % per step on a pipeline's short flows)."""
    if S.wh_gt0_ps[g] < 0:
        return
    back = _parked_for(S, g, now)
    npt = S.p_free_ps.shape[0]
    mask = S.wh_mask
    for port in range(npt):
        if S.wh_pgrp[port] == g:
            S.wh_pgrp[port] = -1
            mask[port] = True
    q = S.wh_ghead[g]
    while q >= 0:  # finished shadow QPs too: their parked timers and packets move back
        if not S.wh_hold[q]:  # held flows have nothing parked
            mask[npt + q] = True
        q = S.wh_gnext[q]
    if S.wh_glive[g] == 0:  # every flow finished with its leader: nothing of it is left to run
        collapse_marked(S, mask, now)
    else:
        shift_marked(S, P, mask, back - PARK_PS)
    for port in range(npt):
        mask[port] = False
    q = S.wh_ghead[g]
    while q >= 0:
        mask[npt + q] = False
        q = S.wh_gnext[q]
    total = 0
    for i in range(S.cnt[C_WH_NACT]):
        q = S.wh_act[i]
        if S.wh_qgrp[q] != g:
            continue
        _leave(S, q)
        r = S.wh_lab[q]
        if r >= 0:
            phantom_off(S, P, r)
            S.wh_lead[r] = -1
            S.wh_memo[r] = MEMO_DONE
            S.wh_state[r] = PART_TRANSIENT
            S.wh_t1_ps[r] = now
            S.wh_flag[r] = 0  # not steady at this tick (the sampler's per-partition flag)
        if S.wh_hold[q]:
            S.qp_next_avail_ps[q] = now
        if S.wh_hold[q] == HOLD_WAITING:  # never matched: it starts now
            S.wh_hold[q] = HOLD_FREE
        elif not S.qp_done[q]:
            S.wh_hold[q] = HOLD_FREE
            m = S.wh_mapq[q]
            total += credit(S, P, q, np.float64(S.wh_vcred[q] + _progress(S, m, now) - S.wh_lu0[q]))
            S.wh_cred[q] = 0  # the leader's real progress: never rolled back
            copy_cc(S, P, m, q, now)
        S.wh_mapq[q] = -1
        S.wh_vcred[q] = 0
        S.wh_n[q] = -1  # its own window starts again
        S.wh_last[q] = S.qp_una[q]
        S.wh_tlast_ps[q] = S.wh_tack_ps[q]
        nic = S.qp_nic[q]
        if not S.qp_done[q]:
            if S.nic_wake_ps[nic] >= 0:
                nic_update_next_avail(S, nic, S.qp_next_avail_ps[q], now)
            elif not S.p_busy[nic]:
                calls.nic_dequeue(S, P, nic, now)
    q = S.wh_ghead[g]
    while q >= 0:  # the members not on the active list (finished and dropped from it)
        nxt = S.wh_gnext[q]
        _leave(S, q)
        q = nxt
    S.wh_glive[g] = 0
    S.wh_gt0_ps[g] = -1
    S.cnt[C_WH_LIVE] -= 1
    S.cnt[C_WH_BYTES] += total
    S.cnt[C_WH_SHADOW_BYTES] += total
    S.cnt[C_WH_UNPARKED] += 1


@njit(cache=True)
def mirror_group(S, r):
    """The parked group of shadow ``r`` (-1 if none)."""
    return S.wh_qgrp[r] if S.wh_memo[r] == MEMO_WAIT else -1


@njit(cache=True)
def release_orphans(S, P, now):
    """Materialise every shadow whose leader is no longer the partition it mirrors (called after
    a partition pass; re-formed shadows are left to the bridge)."""
    for i in range(S.cnt[C_WH_NACT]):
        f = S.wh_act[i]
        if S.wh_lab[f] != f or S.wh_memo[f] != MEMO_WAIT:
            continue
        lead = S.wh_lead[f]
        if S.wh_lab[lead] != lead or S.wh_tform_ps[lead] != S.wh_t0_ps[f]:
            wh_calls.materialise(S, P, S.wh_qgrp[f], now)
            S.cnt[C_WH_ORPHANS] += 1


@njit(cache=True)
def unpark_foreign(S, P, port, q):
    """Move parked ``port`` back to now if QP ``q``, about to use it, is not of its group.

    A group keeps the ports its partition had when it was parked. Once its flows move on (a
    shadow remapped onto its leader's next step, its members finished with their leaders), a
    port may carry no flow of the group any more while its events are still parked: a packet of
    another flow queued there, or a flow starting on it, waited until the group was
    materialised, and a leader waiting for such an ACK deadlocked with its own shadow
    (GPT-175B/1024 at 1 % message size: simulated time ran on past 800 s with four flows
    stuck). Such a port is no longer the group's: its events move back to now alone (its
    queued packets of finished members are ghosts and vanish)."""
    g = S.wh_pgrp[port]
    if g < 0 or S.wh_qgrp[q] == g:
        return
    now = S.cnt[C_NOW]
    back = _parked_for(S, g, now)
    S.wh_pgrp[port] = -1
    mask = S.wh_mask
    mask[port] = True
    if S.wh_glive[g] == 0:  # every flow finished with its leader: nothing of it is left to run
        collapse_marked(S, mask, now)
    else:
        shift_marked(S, P, mask, back - PARK_PS)
    mask[port] = False
    S.cnt[C_WH_PORTS_BACK] += 1


@njit(cache=True)
def finish_mirrors(S, P, m, now):
    """Leader QP ``m`` just finished: every shadow QP mirroring it finishes now too, its
    remaining bytes credited (its packets still parked drain when its group is materialised,
    their ACKs dropped as for any finished flow, :func:`is_ghost`); a group left without
    unfinished flows is materialised."""
    q = S.wh_mhead[m]
    S.wh_mhead[m] = -1
    while q >= 0:
        nxt = S.wh_mnext[q]
        g = S.wh_qgrp[q]
        if S.wh_mapq[q] == m and g >= 0 and not S.qp_done[q] and S.wh_hold[q] != HOLD_WAITING:
            extra = S.qp_size[q] - S.qp_una[q]
            S.qp_size[q] -= extra
            S.qp_credit[q] += extra
            S.cnt[C_WH_BYTES] += extra
            S.cnt[C_WH_SHADOW_BYTES] += extra
            S.cnt[C_WH_MIRRORED] += 1
            S.qp_done[q] = 1
            S.wh_ghost[q] = 1
            S.cnt[C_WH_DIRTY] = 1
            cc_on_finish(S, P, q)
            S.wh_glive[g] -= 1
            calls.finish_node(S, P, S.qp_node[q], now)  # may hold flows it releases onto the shadow
            if S.wh_glive[g] == 0:
                wh_calls.materialise(S, P, g, now)
                S.cnt[C_WH_EMPTIED] += 1
        q = nxt


@njit(cache=True, inline="always")
def is_ghost(S, p):
    """Whether packet ``p`` belongs to a shadow QP that finished with its leader: its bytes were
    all credited, so its data and ACKs still in the fabric (parked with its group and released
    when the group is materialised) are dropped where they next arrive or leave a queue, taking
    no link time. Drained instead, they loaded ports the next step's flows were using at line
    rate, so they never left: 1-2 stale packets a step, a 262 KB standing queue after 5 ms
    (GPT-22B/256 at 1 % size)."""
    if S.pk_type[p] == PK_PFC:
        return False
    return S.wh_ghost[S.pk_flow[p]] != 0
