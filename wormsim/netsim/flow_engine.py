"""Flow-level engine: a max-min fair fluid simulator over the DAG (:func:`run_flow`).

The same DAG, topology and routes as the packet engine (:mod:`wormsim.netsim.packet_sim`), with
every network flow modelled as a fluid whose rate is the max-min fair share of the *resources* it
crosses, recomputed by progressive filling whenever a flow starts or drains.

Model
-----
Resources
    Every directed fabric port (``0 .. n_ports-1``), and per host ``h`` an NVLink egress
    (``n_ports + h``) and ingress (``n_ports + n_nodes + h``) of rate ``topo.nvlink_rate_bps``
    (a non-blocking NVSwitch). A fabric flow uses the ports of its data route (route ``2q`` of
    :func:`~wormsim.netsim.routing.compile_routes`, called exactly as the packet engine does, so
    the ECMP choices are the same); ACKs use no capacity. An intra-server flow (both ends on the
    same server, ``host_server >= 0``) uses its source's NVLink egress and its destination's
    ingress and never touches the fabric.
Bytes on the wire
    A fabric flow of ``S`` bytes carries ``S + ceil(S / payload) * header`` bytes, with
    ``header = 36 + INT bytes of the cc`` (42 hpcc, 8 timely, 0 dcqcn/dctcp), exactly what the
    packet engine puts on the wire. With ``net.ns3_truncate_tx_ns`` (ns-3.17 truncates each
    serialization to a whole ns, as the packet engine does) a port's usable rate is that of
    back-to-back full packets, ``W * 8 / floor_ns(W * 8 / rate)`` for ``W = payload + header``.
    NVLink flows carry ``S`` bytes (no headers), as in the packet engine's NVLink fluid.
Latency model
    The fluid drains its wire bytes at its max-min rate; the DAG node finishes
    ``latency`` later, where (ns-3's standalone FCT formula, ``base_rtt``)::

        latency = sum over data-route ports (delay + payload * 8 / rate)
                  + sum over ACK-route ports delay

    i.e. the last packet's propagation plus one packet serialization per hop, and the return of
    its ACK. A lone flow therefore finishes at ``start + wire_bytes * 8 / bottleneck + base_rtt``,
    ns-3's ``standalone_fct`` (with its header size). The bandwidth is released at the drain time,
    not at the finish (pipelining). NVLink flows have no latency; ``src == dst`` or 0-byte flows
    finish at once.
Recomputation
    All starts and drains at one simulated time are applied together (one *batch*), then only
    the flows those changes can affect are re-rated. Progressive filling is identical below the
    level ``theta`` = min(old rates of the drained flows, the level at which a resource of a
    started flow saturates given the current rates) -- exact, not a heuristic -- so flows below
    ``theta`` keep their rates and act as fixed loads, and only the non-fixed flows connected to
    the touched resources through non-fixed flows are filled again, over residual capacities.
    The filling runs in rounds: every resource whose fair share is a local minimum (no resource
    its flows cross has a lower share) saturates at that share, so a round freezes all of them at
    once; a round is ``O(F_c * L)`` array work for ``F_c`` flows of route length ``L``, and a few
    rounds suffice in practice. Flows whose rate does not change keep their drain time; drain
    times live in a lazy heap (re-timing pushes a new entry, stale ones are skipped or compacted).
    ``run_flow(..., incremental=False)`` re-rates the whole connected component instead (for
    validation).

Everything runs in one ``@njit`` kernel over structure-of-arrays state, int64 picoseconds; the
kernel returns to Python only between slices of simulated time (for ``progress``) or to grow the
optional rate log.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import polars as pl
from numba import njit
from numba.core import types
from numba.experimental import structref

from wormsim.collective.dag import (
    KIND_COMPUTE,
    KIND_DELAY,
    DagArrays,
)
from wormsim.netsim.flow_plan import FT_FABRIC, FT_NVLINK, plan_flows
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet_sim import _INT_BYTES
from wormsim.netsim.result import SimResult
from wormsim.netsim.topology import Topology

__all__ = ["run_flow", "flow_wire_bytes", "BASE_HEADER_BYTES"]

#: Per-packet header bytes the packet engine sends besides INT (2 PPP + 20 IPv4 + 8 UDP + 6 seq).
BASE_HEADER_BYTES = 36

#: The flow engine returns the packet engine's result type (empty monitors, zero queues).

# flow types per DAG node

# counters
(
    C_NOW,
    C_DONE,
    C_RERATE,
    C_TH_N,
    C_SEQ,
    C_FH_N,
    C_STAMP,
    C_LOG_N,
    C_LOG_LOST,
    C_ACTIVE,
    C_PEAK_ACTIVE,
    C_COMP_FLOWS,
    C_COMP_RES,
    C_NET_STARTED,
    C_NV_STARTED,
    C_INSTANT,
    C_BATCHES,
    C_RECORD,
    C_NSEED,
    C_INITED,
    C_NNEW,
    C_ROUNDS,
) = range(22)
N_COUNTERS = 24
#: float scalars (State.fsc): the re-rating threshold accumulated over a batch
F_THETA, F_FULL = 0, 1

_I64_MAX = np.iinfo(np.int64).max

_FIELDS = (
    "cnt",
    # DAG
    "kind",
    "rank",
    "dur",
    "dep_rem",
    "coff",
    "cidx",
    "g_start",
    "g_finish",
    # compute streams
    "rk_busy",
    "rk_head",
    "rk_tail",
    "g_cnext",
    # flows (per DAG node)
    "f_type",
    "f_wire",
    "f_lat",
    "f_roff",
    "f_res",
    "f_rem",
    "f_rate",
    "f_tupd",
    "f_new",
    # resources
    "res_cap",
    "res_head",
    "res_cnt",
    "inc_next",
    "inc_prev",
    "inc_flow",
    # timer heap: node-done events keyed (time, seq)
    "th_t",
    "th_s",
    "th_v",
    # flow heap: indexed, drain time keyed (time, node)
    "fh_t",
    "fh_v",
    "fh_pos",
    # re-rating scratch
    "seeds",
    "res_mark",
    "flow_mark",
    "comp_res",
    "comp_flows",
    "wf_cap",
    "wf_cnt",
    "new_rate",
    "sh",
    "nbmin",
    "fmin",
    "act",
    "new_list",
    "res_eval",
    "fsc",
    # rate log
    "log_t",
    "log_v",
    "log_r",
)


@structref.register
class _StateType(types.StructRef):
    """Numba type of the flow-engine state: one pointer per call, not one per array."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class _State(structref.StructRefProxy):
    """The flow-engine state (fields :data:`_FIELDS`); Python keeps the dict of arrays."""

    def __new__(cls, *args):
        return structref.StructRefProxy.__new__(cls, *args)


structref.define_constructor(_State, _StateType, list(_FIELDS))
structref.define_boxing(_StateType, _State)


# ----------------------------------------------------------------------------- heaps
@njit(cache=True, inline="always")
def _th_less(S, i, j):
    return S.th_t[i] < S.th_t[j] or (S.th_t[i] == S.th_t[j] and S.th_s[i] < S.th_s[j])


@njit(cache=True)
def _th_push(S, t, v):
    i = S.cnt[C_TH_N]
    S.cnt[C_TH_N] = i + 1
    S.th_t[i] = t
    S.th_s[i] = S.cnt[C_SEQ]
    S.cnt[C_SEQ] += 1
    S.th_v[i] = v
    while i > 0:
        p = (i - 1) >> 1
        if _th_less(S, i, p):
            S.th_t[i], S.th_t[p] = S.th_t[p], S.th_t[i]
            S.th_s[i], S.th_s[p] = S.th_s[p], S.th_s[i]
            S.th_v[i], S.th_v[p] = S.th_v[p], S.th_v[i]
            i = p
        else:
            break


@njit(cache=True)
def _th_pop(S):
    v = S.th_v[0]
    n = S.cnt[C_TH_N] - 1
    S.cnt[C_TH_N] = n
    S.th_t[0], S.th_s[0], S.th_v[0] = S.th_t[n], S.th_s[n], S.th_v[n]
    i = 0
    while True:
        m = i
        a = 2 * i + 1
        if a < n and _th_less(S, a, m):
            m = a
        if a + 1 < n and _th_less(S, a + 1, m):
            m = a + 1
        if m == i:
            break
        S.th_t[i], S.th_t[m] = S.th_t[m], S.th_t[i]
        S.th_s[i], S.th_s[m] = S.th_s[m], S.th_s[i]
        S.th_v[i], S.th_v[m] = S.th_v[m], S.th_v[i]
        i = m
    return v


# drain-time heap: a lazy min-heap of (time, flow). ``fh_pos[v]`` holds flow ``v``'s current
# drain time (-1 if none); an entry whose time differs is stale and skipped. Re-timing a flow
# pushes a new entry (sift-up, O(1) on average) instead of moving the old one; stale entries are
# dropped in bulk when they outnumber the live ones.
@njit(cache=True, inline="always")
def _fh_less(fh_t, fh_v, i, j):
    return fh_t[i] < fh_t[j] or (fh_t[i] == fh_t[j] and fh_v[i] < fh_v[j])


@njit(cache=True)
def _fh_down(fh_t, fh_v, i, n):
    while True:
        m = i
        a = 2 * i + 1
        if a < n and _fh_less(fh_t, fh_v, a, m):
            m = a
        if a + 1 < n and _fh_less(fh_t, fh_v, a + 1, m):
            m = a + 1
        if m == i:
            return
        fh_t[i], fh_t[m] = fh_t[m], fh_t[i]
        fh_v[i], fh_v[m] = fh_v[m], fh_v[i]
        i = m


@njit(cache=True)
def _fh_push(fh_t, fh_v, cnt, v, t):
    i = cnt[C_FH_N]
    cnt[C_FH_N] = i + 1
    fh_t[i] = t
    fh_v[i] = v
    while i > 0:
        p = (i - 1) >> 1
        if _fh_less(fh_t, fh_v, i, p):
            fh_t[i], fh_t[p] = fh_t[p], fh_t[i]
            fh_v[i], fh_v[p] = fh_v[p], fh_v[i]
            i = p
        else:
            break


@njit(cache=True)
def _fh_compact(fh_t, fh_v, fh_pos, cnt):
    """Drop stale entries and re-heapify."""
    k = 0
    for i in range(cnt[C_FH_N]):
        v = fh_v[i]
        if fh_pos[v] == fh_t[i]:
            fh_t[k] = fh_t[i]
            fh_v[k] = v
            k += 1
    cnt[C_FH_N] = k
    for i in range(k // 2 - 1, -1, -1):
        _fh_down(fh_t, fh_v, i, k)


@njit(cache=True)
def _fh_remove_top(fh_t, fh_v, cnt):
    """Drop the heap's top entry: the last one takes its place and sifts down."""
    n = cnt[C_FH_N] - 1
    cnt[C_FH_N] = n
    fh_t[0] = fh_t[n]
    fh_v[0] = fh_v[n]
    _fh_down(fh_t, fh_v, 0, n)


@njit(cache=True)
def _fh_top(S):
    """Earliest live drain time (``_I64_MAX`` if none); stale tops are discarded."""
    fh_t, fh_v, fh_pos, cnt = S.fh_t, S.fh_v, S.fh_pos, S.cnt
    while cnt[C_FH_N] > 0:
        if fh_pos[fh_v[0]] == fh_t[0]:
            return fh_t[0]
        _fh_remove_top(fh_t, fh_v, cnt)
    return _I64_MAX


@njit(cache=True)
def _fh_pop(S):
    """Remove the top entry (call after :func:`_fh_top` found it live); returns its flow."""
    fh_t, fh_v, fh_pos, cnt = S.fh_t, S.fh_v, S.fh_pos, S.cnt
    v = fh_v[0]
    fh_pos[v] = -1
    _fh_remove_top(fh_t, fh_v, cnt)
    return v


# ----------------------------------------------------------------------------- fluid
@njit(cache=True)
def _log(S, now, v, rate):
    if S.cnt[C_RECORD] == 0:
        return
    k = S.cnt[C_LOG_N]
    if k >= S.log_t.shape[0]:
        S.cnt[C_LOG_LOST] += 1
        return
    S.log_t[k] = now
    S.log_v[k] = v
    S.log_r[k] = rate * 8e12
    S.cnt[C_LOG_N] = k + 1


@njit(cache=True)
def _seed(S, r):
    """Mark resource ``r`` as changed in the current batch."""
    if S.res_mark[r] != -S.cnt[C_BATCHES] - 1:
        S.res_mark[r] = -S.cnt[C_BATCHES] - 1
        S.seeds[S.cnt[C_NSEED]] = r
        S.cnt[C_NSEED] += 1


@njit(cache=True)
def _start_flow(S, v, now):
    """Attach flow ``v`` to its resources; its rate is set by the next re-rating."""
    S.f_rem[v] = S.f_wire[v]
    S.f_rate[v] = 0.0
    S.f_tupd[v] = now
    S.f_new[v] = 1
    S.new_list[S.cnt[C_NNEW]] = v
    S.cnt[C_NNEW] += 1
    for j in range(S.f_roff[v], S.f_roff[v + 1]):
        r = S.f_res[j]
        h = S.res_head[r]
        S.inc_next[j] = h
        S.inc_prev[j] = -1
        if h >= 0:
            S.inc_prev[h] = j
        S.res_head[r] = j
        S.res_cnt[r] += 1
        _seed(S, r)
    S.cnt[C_ACTIVE] += 1
    if S.cnt[C_ACTIVE] > S.cnt[C_PEAK_ACTIVE]:
        S.cnt[C_PEAK_ACTIVE] = S.cnt[C_ACTIVE]


@njit(cache=True)
def _drain(S, v, now):
    """Flow ``v`` has put its last byte on the wire: detach it, finish after its latency."""
    for j in range(S.f_roff[v], S.f_roff[v + 1]):
        r = S.f_res[j]
        a, b = S.inc_prev[j], S.inc_next[j]
        if a >= 0:
            S.inc_next[a] = b
        else:
            S.res_head[r] = b
        if b >= 0:
            S.inc_prev[b] = a
        S.res_cnt[r] -= 1
        _seed(S, r)
    if S.f_rate[v] < S.fsc[F_THETA]:
        S.fsc[F_THETA] = S.f_rate[v]
    S.f_rem[v] = 0.0
    S.f_rate[v] = 0.0
    S.cnt[C_ACTIVE] -= 1
    _log(S, now, v, 0.0)
    _th_push(S, now + S.f_lat[v], v)


@njit(cache=True)
def _saturation_level(r, cap, n, res_head, inc_next, inc_flow, f_new, f_rate):
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
            if f_new[v] or f_rate[v] > t:
                load += t
                slope += 1
            else:
                load += f_rate[v]
        if load >= cap * (1.0 - 1e-12) or slope == 0:
            break
        t += (cap - load) / slope
    return t


@njit(cache=True)
def _rerate(S, now):
    """Re-rate the flows the batch's starts and drains can affect (progressive filling).

    Progressive filling proceeds exactly as before up to the level ``theta`` = min(rates of
    drained flows, the level at which a resource of a started flow saturates given the current
    rates), so flows with a rate below ``theta`` keep it and act as fixed loads; the others
    reachable from the touched resources through non-fixed flows are filled again over the
    residual capacities.
    """
    cnt, fsc = S.cnt, S.fsc
    res_cap, res_cnt, res_head, res_mark = S.res_cap, S.res_cnt, S.res_head, S.res_mark
    inc_next, inc_flow = S.inc_next, S.inc_flow
    f_roff, f_res, f_rate, f_new, f_rem, f_tupd = (
        S.f_roff,
        S.f_res,
        S.f_rate,
        S.f_new,
        S.f_rem,
        S.f_tupd,
    )
    flow_mark, comp_res, comp_flows = S.flow_mark, S.comp_res, S.comp_flows
    wf_cap, wf_cnt, new_rate = S.wf_cap, S.wf_cnt, S.new_rate
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
                r, res_cap[r], res_cnt[r], res_head, inc_next, inc_flow, f_new, f_rate
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
        wf_cap[r] = res_cap[r]
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
            if f_new[v] == 0 and f_rate[v] < theta:
                wf_cap[r] -= f_rate[v]
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
                        wf_cap[r2] = res_cap[r2]
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
        dt = now - f_tupd[v]
        if dt > 0:
            f_rem[v] -= f_rate[v] * dt
        f_tupd[v] = now
    # progressive filling in rounds: a resource whose fair share is not above the fair share
    # of any resource its flows cross (a local minimum) saturates at that share, so all its
    # flows freeze there; a round freezes every local minimum at once (the global one at least).
    sh, nbmin, fmin, act = S.sh, S.nbmin, S.fmin, S.act
    nact = nfl
    for i in range(nfl):
        act[i] = comp_flows[i]
    nar = 0
    for i in range(nres):
        r = comp_res[i]
        if wf_cnt[r] > 0:
            comp_res[nar] = r
            nar += 1
    rounds = 0
    while nact > 0:
        rounds += 1
        for i in range(nar):
            r = comp_res[i]
            sh[r] = wf_cap[r] / wf_cnt[r]
            nbmin[r] = np.inf
        for i in range(nact):
            v = act[i]
            m = np.inf
            for k in range(f_roff[v], f_roff[v + 1]):
                s = sh[f_res[k]]
                if s < m:
                    m = s
            fmin[v] = m
            for k in range(f_roff[v], f_roff[v + 1]):
                r = f_res[k]
                if m < nbmin[r]:
                    nbmin[r] = m
        keep = 0
        for i in range(nact):
            v = act[i]
            hit = False
            for k in range(f_roff[v], f_roff[v + 1]):
                r = f_res[k]
                if sh[r] <= nbmin[r]:
                    hit = True
                    break
            if hit:
                rate = fmin[v]
                new_rate[v] = rate
                for k in range(f_roff[v], f_roff[v + 1]):
                    r = f_res[k]
                    wf_cap[r] -= rate
                    wf_cnt[r] -= 1
            else:
                act[keep] = v
                keep += 1
        nact = keep
        k2 = 0
        for i in range(nar):
            r = comp_res[i]
            if wf_cnt[r] > 0:
                comp_res[k2] = r
                k2 += 1
        nar = k2
    cnt[C_ROUNDS] += rounds
    # apply: new drain times only where the rate changed
    fh_t, fh_v, fh_pos = S.fh_t, S.fh_v, S.fh_pos
    if cnt[C_FH_N] > 2 * cnt[C_ACTIVE] + 1024:
        _fh_compact(fh_t, fh_v, fh_pos, cnt)
    for i in range(nfl):
        v = comp_flows[i]
        rate = new_rate[v]
        if rate != f_rate[v] or f_new[v]:
            f_rate[v] = rate
            f_new[v] = 0
            _log(S, now, v, rate)
            rem = f_rem[v]
            dt = 0 if rem <= 0.0 else int(np.ceil(rem / rate))
            fh_pos[v] = now + dt
            _fh_push(fh_t, fh_v, cnt, v, now + dt)


# ----------------------------------------------------------------------------- DAG executor
@njit(cache=True)
def _start_compute(S, v, now):
    S.rk_busy[S.rank[v]] = 1
    S.g_start[v] = now
    _th_push(S, now + S.dur[v], v)


@njit(cache=True)
def _release(S, v, now):
    """All dependencies of ``v`` are done: start it."""
    k = S.kind[v]
    if k == KIND_COMPUTE:
        r = S.rank[v]
        if S.rk_busy[r]:
            S.g_cnext[v] = -1
            if S.rk_tail[r] >= 0:
                S.g_cnext[S.rk_tail[r]] = v
            else:
                S.rk_head[r] = v
            S.rk_tail[r] = v
        else:
            _start_compute(S, v, now)
        return
    S.g_start[v] = now
    if k == KIND_DELAY:
        _th_push(S, now + S.dur[v], v)
        return
    ft = S.f_type[v]
    if ft == FT_FABRIC or ft == FT_NVLINK:
        if ft == FT_FABRIC:
            S.cnt[C_NET_STARTED] += 1
        else:
            S.cnt[C_NV_STARTED] += 1
        _start_flow(S, v, now)
    else:
        S.cnt[C_INSTANT] += 1
        _th_push(S, now, v)


@njit(cache=True)
def _node_done(S, v, now):
    if S.kind[v] == KIND_COMPUTE:
        r = S.rank[v]
        S.rk_busy[r] = 0
        h = S.rk_head[r]
        if h >= 0:
            S.rk_head[r] = S.g_cnext[h]
            if S.rk_head[r] < 0:
                S.rk_tail[r] = -1
            _start_compute(S, h, now)
    S.g_finish[v] = now
    S.cnt[C_DONE] += 1
    for j in range(S.coff[v], S.coff[v + 1]):
        c = S.cidx[j]
        S.dep_rem[c] -= 1
        if S.dep_rem[c] == 0:
            _release(S, c, now)


@njit(cache=True)
def _kernel(S, t_stop):
    """Run until the DAG is done (0), ``t_stop`` is passed (1) or the rate log is full (2)."""
    if S.cnt[C_INITED] == 0:
        S.cnt[C_INITED] = 1
        S.cnt[C_BATCHES] += 1
        for v in range(S.kind.shape[0]):
            if S.dep_rem[v] == 0:
                _release(S, v, 0)
        # instant/zero-delay roots are processed by the loop; rate the flows started at 0
        S.cnt[C_NOW] = 0
    while True:
        tt = S.th_t[0] if S.cnt[C_TH_N] > 0 else _I64_MAX
        ft = _fh_top(S)
        now = min(tt, ft)
        if S.cnt[C_NSEED] > 0 and S.cnt[C_NOW] < now:
            # changes made at C_NOW (roots) that are not yet rated
            now = S.cnt[C_NOW]
        if now == _I64_MAX:
            return 0
        if now > t_stop:
            return 1
        if S.cnt[C_RECORD] and S.log_t.shape[0] - S.cnt[C_LOG_N] < 2 * S.cnt[C_ACTIVE] + 64:
            return 2
        S.cnt[C_NOW] = now
        while True:
            busy = False
            while S.cnt[C_TH_N] > 0 and S.th_t[0] == now:
                v = _th_pop(S)
                _node_done(S, v, now)
                busy = True
            while _fh_top(S) == now:
                v = _fh_pop(S)
                _drain(S, v, now)
                busy = True
            if not busy:
                break
        if S.cnt[C_NSEED] > 0:
            _rerate(S, now)
        S.cnt[C_BATCHES] += 1


# ----------------------------------------------------------------------------- build
@njit(cache=True)
def _build_res(
    nodes,
    ftype,
    qidx,
    r_off,
    r_ports,
    src,
    dst,
    n_ports,
    n_nodes,
    p_delay,
    p_ser,
    f_roff,
    f_res,
    inc_flow,
    f_lat,
):
    """Fill each flow node's resource list and its latency."""
    for i in range(nodes.shape[0]):
        v = nodes[i]
        o = f_roff[v]
        if ftype[v] == FT_FABRIC:
            q = qidx[v]
            lat = 0
            for j in range(r_off[2 * q], r_off[2 * q + 1]):
                p = r_ports[j]
                f_res[o] = p
                inc_flow[o] = v
                o += 1
                lat += p_delay[p] + p_ser[p]
            for j in range(r_off[2 * q + 1], r_off[2 * q + 2]):
                lat += p_delay[r_ports[j]]
            f_lat[v] = lat
        else:
            f_res[o] = n_ports + src[v]
            f_res[o + 1] = n_ports + n_nodes + dst[v]
            inc_flow[o] = v
            inc_flow[o + 1] = v


def flow_wire_bytes(size_bytes: np.ndarray | int, payload: int, header: int) -> np.ndarray:
    """Bytes on the wire of a flow: ``size + ceil(size / payload) * header``."""
    s = np.asarray(size_bytes, np.int64)
    return s + (s + payload - 1) // payload * header


def _build(
    dag: DagArrays,
    topo: Topology,
    net: NetworkSpec,
    routing: str,
    seed: int,
    header_bytes: int | None,
    log_capacity: int,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    n = dag.n_nodes
    kind = dag.kind
    src, dst = dag.src.astype(np.int64), dag.dst.astype(np.int64)
    size = dag.size_bytes.astype(np.int64)
    # the same flows, QPs and routes as the packet engine (same flow order, sports and seed)
    plan = plan_flows(dag, topo, routing=routing, seed=seed)
    ftype = plan.flow_type
    nv, fab = ftype == FT_NVLINK, ftype == FT_FABRIC
    qp_nodes, flow_qp, sport = plan.qp_node, plan.flow_qp, plan.sport
    nq = plan.n_qps
    r_off, r_ports = plan.r_off, plan.r_ports

    payload = int(net.payload_size_bytes)
    header = BASE_HEADER_BYTES + _INT_BYTES[net.cc] if header_bytes is None else int(header_bytes)
    rate = topo.port_rate_bps.astype(np.int64)
    p_ser = payload * 8_000_000_000_000 // rate
    eff = rate.astype(np.float64)
    if net.ns3_truncate_tx_ns:
        w = payload + header
        ser_ns = w * 8_000_000_000 // rate
        eff = np.where(ser_ns > 0, w * 8e12 / np.maximum(ser_ns * 1000, 1), eff)
    n_ports, n_nodes = topo.n_ports, topo.n_nodes
    res_cap = np.empty(n_ports + 2 * n_nodes, np.float64)
    res_cap[:n_ports] = eff / 8e12
    res_cap[n_ports:] = float(topo.nvlink_rate_bps) / 8e12

    nres_per = np.zeros(n, np.int64)
    if nq:
        nres_per[qp_nodes] = r_off[2 * np.arange(nq) + 1] - r_off[2 * np.arange(nq)]
    nres_per[nv] = 2
    f_roff = np.zeros(n + 1, np.int64)
    np.cumsum(nres_per, out=f_roff[1:])
    m = int(f_roff[-1])
    f_res = np.zeros(m, np.int64)
    inc_flow = np.zeros(m, np.int64)
    f_lat = np.zeros(n, np.int64)
    _build_res(
        np.flatnonzero(fab | nv).astype(np.int64),
        ftype,
        flow_qp,
        r_off,
        r_ports,
        src,
        dst,
        n_ports,
        n_nodes,
        topo.port_delay_ps.astype(np.int64),
        p_ser,
        f_roff,
        f_res,
        inc_flow,
        f_lat,
    )
    f_wire = np.zeros(n, np.float64)
    f_wire[fab] = flow_wire_bytes(size[fab], payload, header)
    f_wire[nv] = size[nv]

    nflows = int(np.count_nonzero(fab | nv))
    n_ranks = max(int(dag.rank.max()) + 1 if n else 1, 1)
    nr = n_ports + 2 * n_nodes
    i64, f8 = np.int64, np.float64
    cnt = np.zeros(N_COUNTERS, i64)
    cnt[C_RECORD] = 1 if log_capacity > 0 else 0
    lc = max(log_capacity, 1)
    arrays = dict(
        cnt=cnt,
        kind=kind.astype(np.int8),
        rank=dag.rank.astype(i64),
        dur=dag.duration_ps.astype(i64),
        dep_rem=dag.dep_count.astype(i64).copy(),
        coff=dag.child_offsets.astype(i64),
        cidx=dag.child_index.astype(i64),
        g_start=np.full(n, -1, i64),
        g_finish=np.full(n, -1, i64),
        rk_busy=np.zeros(n_ranks, np.int8),
        rk_head=np.full(n_ranks, -1, i64),
        rk_tail=np.full(n_ranks, -1, i64),
        g_cnext=np.full(n, -1, i64),
        f_type=ftype,
        f_wire=f_wire,
        f_lat=f_lat,
        f_roff=f_roff,
        f_res=f_res,
        f_rem=np.zeros(n, f8),
        f_rate=np.zeros(n, f8),
        f_tupd=np.zeros(n, i64),
        f_new=np.zeros(n, np.int8),
        res_cap=res_cap,
        res_head=np.full(nr, -1, i64),
        res_cnt=np.zeros(nr, i64),
        inc_next=np.full(m, -1, i64),
        inc_prev=np.full(m, -1, i64),
        inc_flow=inc_flow,
        th_t=np.zeros(max(n, 1), i64),
        th_s=np.zeros(max(n, 1), i64),
        th_v=np.zeros(max(n, 1), i64),
        fh_t=np.zeros(3 * nflows + 1024, i64),
        fh_v=np.zeros(3 * nflows + 1024, i64),
        fh_pos=np.full(n, -1, i64),
        seeds=np.zeros(nr, i64),
        res_mark=np.zeros(nr, i64),
        flow_mark=np.zeros(n, i64),
        comp_res=np.zeros(nr, i64),
        comp_flows=np.zeros(max(n, 1), i64),
        wf_cap=np.zeros(nr, f8),
        wf_cnt=np.zeros(nr, i64),
        new_rate=np.zeros(n, f8),
        sh=np.zeros(nr, f8),
        nbmin=np.zeros(nr, f8),
        fmin=np.zeros(n, f8),
        act=np.zeros(max(n, 1), i64),
        new_list=np.zeros(max(n, 1), i64),
        res_eval=np.full(nr, -1, i64),
        fsc=np.array([np.inf, 0.0, 0.0, 0.0]),
        log_t=np.zeros(lc, i64),
        log_v=np.zeros(lc, i64),
        log_r=np.zeros(lc, f8),
        # not kernel state: the compiled routes, returned to the caller
        r_off=r_off,
        r_ports=r_ports,
    )
    return arrays, flow_qp, sport


def _make_state(arrays: dict[str, np.ndarray]) -> _State:
    return _State(*(arrays[k] for k in _FIELDS))


def _grow_log(arrays: dict[str, np.ndarray]) -> None:
    """Double the rate log (in place in ``arrays``)."""
    cap = 2 * arrays["log_t"].shape[0] + 2 * int(arrays["cnt"][C_ACTIVE]) + 64
    k = int(arrays["cnt"][C_LOG_N])
    for name in ("log_t", "log_v", "log_r"):
        old = arrays[name]
        a = np.zeros(cap, old.dtype)
        a[:k] = old[:k]
        arrays[name] = a


_WARM: list[float] = []


def _warm() -> float:
    """Compile (or load from cache) the kernel on a tiny scenario; returns the seconds spent."""
    if _WARM:
        return 0.0
    t = time.perf_counter()
    from wormsim.netsim.warmup import tiny_scenario

    dag, topo = tiny_scenario()
    arrays, _, _ = _build(dag, topo, NetworkSpec(cc="dcqcn"), "hash", 0, None, 16)
    _kernel(_make_state(arrays), _I64_MAX)
    _WARM.append(time.perf_counter() - t)
    return _WARM[0]


def run_flow(
    dag: DagArrays,
    topo: Topology,
    net: NetworkSpec,
    *,
    routing: str = "hash",
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    slice_ps: int = 100_000_000,
    header_bytes: int | None = None,
    record_rates: bool = False,
    incremental: bool = True,
) -> SimResult:
    """Simulate the whole DAG with max-min fair fluid flows.

    Parameters
    ----------
    dag, topo, net : the flow DAG, the network and its configuration (payload size, cc for the
        header bytes, ``ns3_truncate_tx_ns``).
    routing : ``"hash"`` or ``"ns3"``, as in :func:`~wormsim.netsim.packet_sim.run_packet` (the
        same routes for the same arguments).
    seed : seeds the ECMP hash (``"hash"``).
    progress : called as ``progress(sim_time_ps, nodes_done)`` after every slice.
    slice_ps : simulated time per kernel call when ``progress`` is given.
    header_bytes : per-packet header bytes on the wire; default ``36 + INT bytes`` of ``net.cc``
        (what the packet engine sends); 48 reproduces ns-3's ``standalone_fct`` constant.
    record_rates : log every rate change as ``rate_samples`` (``time_ps, qp, node_id,
        rate_bps``; rate 0 when a flow drains).
    incremental : re-rate only the flows a change can affect (default); ``False`` re-rates the
        whole connected component of every change (same allocation, slower; for validation).

    Returns
    -------
    SimResult
        ``node_start_ps``/``node_finish_ps`` per DAG node (-1 = never started / finished),
        ``flow_qp``/``sport``/``routes`` as in packet mode, zero ``peak_queue_bytes``, and
        ``counters``: ``rate_recomputations``, ``flows_fabric``, ``flows_nvlink``,
        ``flows_instant``, ``dag_nodes_done``, ``nodes_unfinished``, ``peak_active_flows``,
        ``rerated_flows`` (flows re-rated, summed over recomputations), ``filling_rounds``,
        ``events_processed`` (batches of simultaneous changes), ``sim_wall_s``, ``compile_s``,
        ``build_s``, ``sim_end_ps``.
    """
    t0 = time.perf_counter()
    A, flow_qp, sport = _build(
        dag, topo, net, routing, seed, header_bytes, 4096 if record_rates else 0
    )
    A["fsc"][F_FULL] = 0.0 if incremental else 1.0
    S = _make_state(A)
    t_build = time.perf_counter() - t0
    compile_s = _warm()
    t1 = time.perf_counter()
    t_stop = slice_ps if progress is not None else _I64_MAX
    while True:
        status = _kernel(S, t_stop)
        if status == 2:
            _grow_log(A)
            S = _make_state(A)
            continue
        if status == 1:
            if progress is not None:
                progress(int(A["cnt"][C_NOW]), int(A["cnt"][C_DONE]))
            t_stop += slice_ps
            continue
        break
    wall = time.perf_counter() - t1
    if progress is not None:
        progress(int(A["cnt"][C_NOW]), int(A["cnt"][C_DONE]))
    c = A["cnt"]
    n = dag.n_nodes
    counters: dict[str, float] = {
        "events_processed": int(c[C_BATCHES]),
        "rate_recomputations": int(c[C_RERATE]),
        "flows_fabric": int(c[C_NET_STARTED]),
        "flows_nvlink": int(c[C_NV_STARTED]),
        "flows_instant": int(c[C_INSTANT]),
        "dag_nodes_done": int(c[C_DONE]),
        "nodes_unfinished": n - int(c[C_DONE]),
        "peak_active_flows": int(c[C_PEAK_ACTIVE]),
        "rerated_flows": int(c[C_COMP_FLOWS]),
        "rerated_resources": int(c[C_COMP_RES]),
        "filling_rounds": int(c[C_ROUNDS]),
        "rate_samples_lost": int(c[C_LOG_LOST]),
        "sim_wall_s": wall,
        "compile_s": compile_s,
        "build_s": t_build,
        "sim_end_ps": int(c[C_NOW]),
    }
    k = int(c[C_LOG_N])
    lv = A["log_v"][:k]
    rates = (
        pl.DataFrame(
            {
                "time_ps": A["log_t"][:k],
                "qp": flow_qp[lv],
                "node_id": lv,
                "rate_bps": A["log_r"][:k],
            }
        )
        if record_rates
        else pl.DataFrame()
    )
    return SimResult(
        node_start_ps=A["g_start"].copy(),
        node_finish_ps=A["g_finish"].copy(),
        counters=counters,
        flow_qp=flow_qp,
        sport=sport,
        peak_queue_bytes=np.zeros(topo.n_ports, np.int64),
        routes=(A["r_off"], A["r_ports"]),
        rate_samples=rates,
        queue_samples=pl.DataFrame(),
    )
