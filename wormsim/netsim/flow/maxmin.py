"""Max-min fair rates by progressive filling, re-run only where a batch of changes reaches.

A flow crosses *resources* (fabric ports, NVLink egress/ingress per host: see
:mod:`wormsim.netsim.flow.run`); starting one attaches it to its resources' incidence lists,
draining one detaches it; every resource touched is *seeded*, and :func:`rerate` re-fills the
flows those seeds can affect. Rates are bytes/ps, times ps.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.dlist import dl_push, dl_unlink
from wormsim.netsim.common.jit import njit
from wormsim.netsim.common.maxmin import fill_rounds
from wormsim.netsim.flow.state import (
    C_ACTIVE,
    C_BATCHES,
    C_COMP_FLOWS,
    C_COMP_RES,
    C_LOG_LOST,
    C_LOG_N,
    C_NNEW,
    C_NSEED,
    C_PEAK_ACTIVE,
    C_RECORD,
    C_RERATE,
    C_ROUNDS,
    C_STAMP,
    F_FULL,
    F_THETA,
)
from wormsim.netsim.flow.timers import compact_drains, push_timer
from wormsim.netsim.packet.heap import heap_push_seq
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["start_flow", "drain", "rerate"]


@njit(cache=True)
def _log(S, now, v, rate_Bpps):
    """Log flow ``v``'s new rate (bytes/ps) at ``now``, in bit/s, if the log is on."""
    if S.cnt[C_RECORD] == 0:
        return
    k = S.cnt[C_LOG_N]
    if k >= S.log_t_ps.shape[0]:
        S.cnt[C_LOG_LOST] += 1
        return
    S.log_t_ps[k] = now
    S.log_v[k] = v
    S.log_r_bps[k] = rate_Bpps * BPS_PER_BYTE_PER_PS
    S.cnt[C_LOG_N] = k + 1


@njit(cache=True)
def _seed(S, r):
    """Mark resource ``r`` as changed in the current batch."""
    if S.res_mark[r] != -S.cnt[C_BATCHES] - 1:
        S.res_mark[r] = -S.cnt[C_BATCHES] - 1
        S.seeds[S.cnt[C_NSEED]] = r
        S.cnt[C_NSEED] += 1


@njit(cache=True)
def start_flow(S, v, now):
    """Attach flow ``v`` to its resources; its rate is set by the next re-rating."""
    S.f_rem[v] = S.f_wire[v]
    S.f_rate_Bpps[v] = 0.0
    S.f_tupd_ps[v] = now
    S.f_new[v] = 1
    S.new_list[S.cnt[C_NNEW]] = v
    S.cnt[C_NNEW] += 1
    for j in range(S.f_roff[v], S.f_roff[v + 1]):
        r = S.f_res[j]
        dl_push(S.res_head, S.inc_prev, S.inc_next, r, j)
        S.res_cnt[r] += 1
        _seed(S, r)
    S.cnt[C_ACTIVE] += 1
    if S.cnt[C_ACTIVE] > S.cnt[C_PEAK_ACTIVE]:
        S.cnt[C_PEAK_ACTIVE] = S.cnt[C_ACTIVE]


@njit(cache=True)
def drain(S, v, now):
    """Flow ``v`` has put its last byte on the wire: detach it, finish after its latency."""
    for j in range(S.f_roff[v], S.f_roff[v + 1]):
        r = S.f_res[j]
        dl_unlink(S.res_head, S.inc_prev, S.inc_next, r, j)
        S.res_cnt[r] -= 1
        _seed(S, r)
    if S.f_rate_Bpps[v] < S.fsc[F_THETA]:
        S.fsc[F_THETA] = S.f_rate_Bpps[v]
    S.f_rem[v] = 0.0
    S.f_rate_Bpps[v] = 0.0
    S.cnt[C_ACTIVE] -= 1
    _log(S, now, v, 0.0)
    push_timer(S, now + S.f_lat_ps[v], v)


@njit(cache=True)
def _saturation_level(r, cap, n, res_head, inc_next, inc_flow, f_new, f_rate_Bpps):
    """Level at which resource ``r`` saturates if its new flows rise from 0 and its old flows
    rise to their current rates: the root ``t`` of ``sum(min(rate_i, t)) + n_new * t = cap``
    (Newton from below on a concave piecewise-linear function: exact in a few steps)."""
    t = cap / n
    for _ in range(n + 1):
        load = 0.0
        slope = 0
        j = res_head[r]
        while j >= 0:
            v = inc_flow[j]
            j = inc_next[j]
            if f_new[v] or f_rate_Bpps[v] > t:
                load += t
                slope += 1
            else:
                load += f_rate_Bpps[v]
        if load >= cap * (1.0 - 1e-12) or slope == 0:
            break
        t += (cap - load) / slope
    return t


@njit(cache=True)
def rerate(S, now):
    """Re-rate the flows the batch's starts and drains can affect (progressive filling).

    Progressive filling proceeds exactly as before up to the level ``theta`` = min(rates of
    drained flows, the level at which a resource of a started flow saturates given the current
    rates), so flows with a rate below ``theta`` keep it and act as fixed loads; the others
    reachable from the touched resources through non-fixed flows are filled again over the
    residual capacities.
    """
    cnt, fsc = S.cnt, S.fsc
    res_cap_Bpps, res_cnt, res_head, res_mark = S.res_cap_Bpps, S.res_cnt, S.res_head, S.res_mark
    inc_next, inc_flow = S.inc_next, S.inc_flow
    f_roff, f_res, f_rate_Bpps, f_new, f_rem, f_tupd_ps = (
        S.f_roff,
        S.f_res,
        S.f_rate_Bpps,
        S.f_new,
        S.f_rem,
        S.f_tupd_ps,
    )
    flow_mark, comp_res, comp_flows = S.flow_mark, S.comp_res, S.comp_flows
    wf_cap_Bpps, wf_cnt, new_rate_Bpps = S.wf_cap_Bpps, S.wf_cnt, S.new_rate_Bpps
    theta = fsc[F_THETA] if fsc[F_FULL] == 0.0 else -np.inf
    new_list, res_eval = S.new_list, S.res_eval
    batch = cnt[C_BATCHES]
    for i in range(cnt[C_NNEW]):
        v = new_list[i]
        for k in range(f_roff[v], f_roff[v + 1]):
            r = f_res[k]
            if res_eval[r] == batch:
                continue
            res_eval[r] = batch
            t = _saturation_level(
                r, res_cap_Bpps[r], res_cnt[r], res_head, inc_next, inc_flow, f_new, f_rate_Bpps
            )
            if t < theta:
                theta = t
    cnt[C_NNEW] = 0
    fsc[F_THETA] = np.inf
    # rates equal in exact arithmetic may differ by rounding: keep a relative margin
    theta *= 1.0 - 1e-9
    cnt[C_STAMP] += 1
    stamp = cnt[C_STAMP]
    nres = 0
    seeds = S.seeds
    for i in range(cnt[C_NSEED]):
        r = seeds[i]
        res_mark[r] = stamp
        comp_res[nres] = r
        wf_cap_Bpps[r] = res_cap_Bpps[r]
        wf_cnt[r] = 0
        nres += 1
    cnt[C_NSEED] = 0
    # the component of the touched resources through non-fixed flows, with residual capacities
    nfl = 0
    i = 0
    while i < nres:
        r = comp_res[i]
        i += 1
        j = res_head[r]
        while j >= 0:
            v = inc_flow[j]
            j = inc_next[j]
            if f_new[v] == 0 and f_rate_Bpps[v] < theta:
                wf_cap_Bpps[r] -= f_rate_Bpps[v]
                continue
            wf_cnt[r] += 1
            if flow_mark[v] != stamp:
                flow_mark[v] = stamp
                comp_flows[nfl] = v
                nfl += 1
                for k in range(f_roff[v], f_roff[v + 1]):
                    r2 = f_res[k]
                    if res_mark[r2] != stamp:
                        res_mark[r2] = stamp
                        comp_res[nres] = r2
                        wf_cap_Bpps[r2] = res_cap_Bpps[r2]
                        wf_cnt[r2] = 0
                        nres += 1
    cnt[C_RERATE] += 1
    cnt[C_COMP_FLOWS] += nfl
    cnt[C_COMP_RES] += nres
    if nfl == 0:
        return
    # bring the component's bytes up to date
    for i in range(nfl):
        v = comp_flows[i]
        dt = now - f_tupd_ps[v]
        if dt > 0:
            f_rem[v] -= f_rate_Bpps[v] * dt
        f_tupd_ps[v] = now
    # progressive filling over the component's residual capacities
    act = S.act
    for i in range(nfl):
        act[i] = comp_flows[i]
    rounds = fill_rounds(
        act,
        nfl,
        comp_res,
        nres,
        f_roff,
        f_res,
        wf_cap_Bpps,
        wf_cnt,
        S.sh_Bpps,
        S.nbmin_Bpps,
        S.fmin_Bpps,
        new_rate_Bpps,
    )
    cnt[C_ROUNDS] += rounds
    # apply: new drain times only where the rate changed
    fh_pos_ps = S.fh_pos_ps
    if S.fh_c[0] > 2 * cnt[C_ACTIVE] + 1024:
        compact_drains(S)
    for i in range(nfl):
        v = comp_flows[i]
        rate = new_rate_Bpps[v]
        if rate != f_rate_Bpps[v] or f_new[v]:
            f_rate_Bpps[v] = rate
            f_new[v] = 0
            _log(S, now, v, rate)
            rem = f_rem[v]
            dt = 0 if rem <= 0.0 else int(np.ceil(rem / rate))
            fh_pos_ps[v] = now + dt
            heap_push_seq(S.fh_c, S.fh_t_ps, S.fh_s, S.fh_e, S.fh_o, now + dt, v, v, 0)
