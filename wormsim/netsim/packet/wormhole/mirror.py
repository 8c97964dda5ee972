"""Does a re-formed shadow still mirror its leader? The memo bridge's per-shadow test, jitted.

At every partition pass a shadow whose leader finished a flow, or that was released new flows,
re-forms, and the bridge decides whether it can stay parked behind the leader's re-formed
partition (:meth:`~wormsim.netsim.wormhole.bridge.MemoBridge._reform`). It runs for every shadow
that re-forms, up to hundreds of thousands of times a run at 256 GPUs, so it is jitted rather than
written with numpy over small arrays (docs/wormhole.md, "The memo bridge's cost").
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.wormhole.fields import HOLD_WAITING, PART_SKIPPED
from wormsim.netsim.packet.wormhole.skip import MEMO_WAIT

__all__ = ["progress", "mirror_order", "MIRRORED", "MIRROR_REASONS"]

MIRRORED = 0
#: why a re-formed shadow does not mirror its leader, by the code :func:`mirror_order` returns
MIRROR_REASONS = ("", "groups", "no_parked", "size_count", "parked_map", "held_match", "bytes")


@njit(cache=True)
def progress(qs, now, qp_una, qp_credit, wh_lab, wh_t0_ps, wh_t1_ps, wh_state, wh_memo, wh_cred):
    """Bytes QPs ``qs`` have done by ``now``: acked plus credited, a skip under way counted in
    proportion to the time it has run (as the kernel's shadow code counts a leader's)."""
    out = np.empty(qs.size, np.int64)
    for i in range(qs.size):
        q = qs[i]
        done = qp_una[q] + qp_credit[q]
        r = wh_lab[q]
        if r >= 0 and wh_state[r] == PART_SKIPPED and wh_t1_ps[r] > now and wh_memo[r] != MEMO_WAIT:
            left = (wh_t1_ps[r] - now) / max(wh_t1_ps[r] - wh_t0_ps[r], 1)
            done -= np.int64(wh_cred[q] * left)
        out[i] = done
    return out


@njit(cache=True)
def _mapped(host, own, mirrored, n):
    """The host that ``host`` corresponds to on the leader's side (-1 if none; the last pair
    naming it wins)."""
    found = -1
    for k in range(n):
        if own[k] == host:
            found = mirrored[k]
    return found


@njit(cache=True)
def mirror_order(
    qs, lead_qs, mtu, tol, now, src, dst, qp_start_ps, qp_size, qp_credit, qp_una, wh_qgrp, wh_hold,
    wh_mapq, wh_vcred, wh_lu0, wh_r0_bps, wh_lab, wh_t0_ps, wh_t1_ps, wh_state, wh_memo, wh_cred,
):  # fmt: skip
    """(code, ``qs`` in the order of the leader's QPs ``lead_qs``, their start rates).

    Parked QPs go where the leader QPs they mirror are; a held flow takes the first free leader
    flow that started with it, with its size, between the hosts its own correspond to. Code
    :data:`MIRRORED` if every flow found its place and has its leader flow's remaining bytes
    (within ``tol`` of them, or two packets), else the index of the reason in
    :data:`MIRROR_REASONS`. ``lead_qs`` ascend. The caller checks the labelled FCG."""
    n = qs.size
    fo = np.full(n, -1, np.int64)
    r0 = np.zeros(n)
    g = wh_qgrp[qs[0]]
    n_parked = 0
    for i in range(n):
        q = qs[i]
        if wh_qgrp[q] < 0 or wh_qgrp[q] != g:
            return 1, fo, r0
        if wh_hold[q] != HOLD_WAITING:
            if wh_mapq[q] < 0:
                return 2, fo, r0
            n_parked += 1
    if n_parked == 0:
        return 2, fo, r0
    if lead_qs.size != n:
        return 3, fo, r0
    own = np.empty(2 * n_parked, np.int64)
    mirrored = np.empty(2 * n_parked, np.int64)
    k = 0
    for i in range(n):
        q = qs[i]
        if wh_hold[q] == HOLD_WAITING:
            continue
        m = wh_mapq[q]
        at = np.searchsorted(lead_qs, m)
        if at >= n or lead_qs[at] != m or fo[at] >= 0:
            return 4, fo, r0
        fo[at] = q
        own[k], mirrored[k] = src[q], src[m]
        own[k + 1], mirrored[k + 1] = dst[q], dst[m]
        k += 2
    for i in range(n):
        q = qs[i]
        if wh_hold[q] != HOLD_WAITING:
            continue
        hs = _mapped(src[q], own, mirrored, k)
        hd = _mapped(dst[q], own, mirrored, k)
        size_q = qp_size[q] + qp_credit[q]
        placed = False
        for j in range(n):
            lq = lead_qs[j]
            if (
                fo[j] >= 0
                or qp_start_ps[lq] != qp_start_ps[q]
                or qp_size[lq] + qp_credit[lq] != size_q
            ):
                continue
            if (hs >= 0 and src[lq] != hs) or (hd >= 0 and dst[lq] != hd):
                continue
            fo[j] = q
            placed = True
            break
        if not placed:
            return 5, fo, r0
    # remaining bytes: the leader's by its progress, a shadow QP's by its leaders' progress since
    # it was mapped (a held flow: its new leader flow's, which started with it)
    lead_done = progress(
        lead_qs, now, qp_una, qp_credit, wh_lab, wh_t0_ps, wh_t1_ps, wh_state, wh_memo, wh_cred
    )
    old = np.empty(n, np.int64)
    for j in range(n):
        q = fo[j]
        old[j] = q if wh_hold[q] == HOLD_WAITING else wh_mapq[q]
    old_done = progress(
        old, now, qp_una, qp_credit, wh_lab, wh_t0_ps, wh_t1_ps, wh_state, wh_memo, wh_cred
    )
    for j in range(n):
        q = fo[j]
        lq = lead_qs[j]
        rem_lead = qp_size[lq] + qp_credit[lq] - lead_done[j]
        if wh_hold[q] == HOLD_WAITING:
            virtual = lead_done[j]
            r0[j] = wh_r0_bps[q]
        else:
            virtual = wh_vcred[q] + old_done[j] - wh_lu0[q]
            r0[j] = wh_r0_bps[old[j]]
        rem = qp_size[q] - qp_una[q] - virtual
        if abs(rem - rem_lead) > max(tol * rem_lead, 2 * mtu):
            return 6, fo, r0
    return MIRRORED, fo, r0
