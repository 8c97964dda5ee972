"""The DAG executor inside the kernel: dependency counters, delay and compute nodes, flow start
(packet QP or NVLink fluid), and node completion.

* ``delay``: finishes ``duration`` after release.
* ``compute``: runs on its rank's compute stream, one at a time per rank, FIFO in release order.
* ``flow``: ``src == dst`` or 0 bytes finish at once; both ends on the same server
  (``host_server`` equal and >= 0) go to the NVLink fluid model (max-min fair, per-GPU egress and
  ingress ``nvlink_rate_bps``); otherwise a QP starts on the source NIC, two zero-delay events
  after its release (:func:`qp_start_event`), as in HPCC ns-3.
"""

from __future__ import annotations

import numpy as np

from wormsim.collective.dag import KIND_COMPUTE
from wormsim.netsim.common.dag_runtime import ADMIT_FLOW, admit, complete, next_compute
from wormsim.netsim.common.jit import njit
from wormsim.netsim.common.maxmin import fill_rounds
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.cc import cc_on_start
from wormsim.netsim.packet.core import push
from wormsim.netsim.packet.state import (
    C_FLUID_GEN,
    C_FLUID_LAST,
    C_FLUID_N,
    C_NODES_DONE,
    EV_DAGDONE,
    EV_FLUID,
    EV_QPSTART,
)
from wormsim.netsim.packet.wormhole import hooks
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = [
    "release",
    "finish_node",
    "fluid_event",
    "dag_done_event",
    "qp_start_event",
    "start_roots",
]

_M24 = (1 << 24) - 1


@njit(cache=True)
def _start_qp(S, P, q, now):
    S.qp_start_ps[q] = now
    port = S.qp_nic[q]
    rate = float(S.p_rate_bps[port])
    S.qp_rate_bps[q] = rate
    S.qp_max_bps[q] = rate
    S.qp_win[q] = P.win
    cc_on_start(S, P, q, rate)  # may set its own window
    S.qp_next_avail_ps[q] = now
    hooks.flow_start(S, P, q, now)
    S.nic_qps[S.nic_off[port] + S.nic_n[port]] = q
    S.nic_n[port] += 1
    calls.nic_dequeue(S, P, port, now)


@njit(cache=True)
def _fluid_advance(S, now):
    dt = now - S.cnt[C_FLUID_LAST]
    if dt > 0:
        for i in range(S.cnt[C_FLUID_N]):
            v = S.fl_list[i]
            S.fl_rem[v] -= S.fl_rate_bps[v] * dt / BPS_PER_BYTE_PER_PS
    S.cnt[C_FLUID_LAST] = now


@njit(cache=True)
def _fluid_rates(S, P, now):
    """Max-min fair rates of the intra-server flows and their next finish: every flow crosses
    its source GPU's NVLink egress (resource ``h``) and its destination's ingress (``nh + h``),
    each of ``nvlink_rate_bps``, filled by :func:`~wormsim.netsim.common.maxmin.fill_rounds`."""
    n = S.cnt[C_FLUID_N]
    if n == 0:
        return
    nh = S.host_server.shape[0]
    f_roff = np.arange(0, 2 * n + 1, 2).astype(np.int64)
    f_res = np.empty(2 * n, np.int64)
    cap = np.full(2 * nh, P.nvlink_rate_bps)
    cnt = np.zeros(2 * nh, np.int64)
    res = np.empty(2 * n, np.int64)
    nres = np.int64(0)  # typed, not a literal: fill_rounds compiles once
    for i in range(n):
        v = S.fl_list[i]
        f_res[2 * i] = S.g_src[v]
        f_res[2 * i + 1] = nh + S.g_dst[v]
        for r in (f_res[2 * i], f_res[2 * i + 1]):
            if cnt[r] == 0:
                res[nres] = r
                nres += 1
            cnt[r] += 1
    act = np.arange(n).astype(np.int64)
    rate = np.empty(n)
    fill_rounds(
        act, n, res, nres, f_roff, f_res, cap, cnt, np.empty(2 * nh), np.empty(2 * nh),
        np.empty(n), rate,
    )  # fmt: skip
    for i in range(n):
        S.fl_rate_bps[S.fl_list[i]] = rate[i]
    t_next = np.inf
    for i in range(n):
        v = S.fl_list[i]
        t = max(S.fl_rem[v], 0.0) * BPS_PER_BYTE_PER_PS / S.fl_rate_bps[v]
        t_next = min(t_next, t)
    S.cnt[C_FLUID_GEN] += 1
    push(S, now + int(np.ceil(t_next)), EV_FLUID, S.cnt[C_FLUID_GEN], -1)


@njit(cache=True)
def fluid_event(S, P, gen, now):
    """A scheduled fluid completion: finish done intra-server flows, recompute the rates."""
    if gen != S.cnt[C_FLUID_GEN]:
        return
    _fluid_advance(S, now)
    i = 0
    while i < S.cnt[C_FLUID_N]:
        v = S.fl_list[i]
        if S.fl_rem[v] <= 1e-3:
            S.cnt[C_FLUID_N] -= 1
            S.fl_list[i] = S.fl_list[S.cnt[C_FLUID_N]]
            calls.finish_node(S, P, v, now)
        else:
            i += 1
    calls.fluid_rates(S, P, now)


@njit(cache=True)
def _start_fluid(S, P, v, now):
    _fluid_advance(S, now)
    S.fl_list[S.cnt[C_FLUID_N]] = v
    S.cnt[C_FLUID_N] += 1
    S.fl_rem[v] = float(S.g_size[v])
    calls.fluid_rates(S, P, now)


@njit(cache=True)
def release(S, P, v, now):
    """All dependencies of node ``v`` are done: start it."""
    t = admit(S, v, now)
    if t >= 0:
        push(S, t, EV_DAGDONE, v, -1)
    if t != ADMIT_FLOW:
        return
    s, d = S.g_src[v], S.g_dst[v]
    if s == d or S.g_size[v] <= 0:
        push(S, now, EV_DAGDONE, v, -1)
    elif S.host_server[s] >= 0 and S.host_server[s] == S.host_server[d]:
        _start_fluid(S, P, v, now)
    else:
        push(S, now, EV_QPSTART, S.g_qp[v], -1)


@njit(cache=True)
def qp_start_event(S, P, arg, now):
    """A released network flow's QP starts in the second of two zero-delay events
    (``arg = q | step << 24``), as HPCC ns-3 creates it: the flow's start schedules
    ``Application::Start`` at +0 (``Node::AddApplication``), which schedules
    ``StartApplication`` at +0 (``Application::DoStart``), which adds the QP. So every event
    already due at that nanosecond (a NIC's wake-up for the host's other flow) goes first."""
    q = arg & _M24
    if arg >> 24 == 0:
        push(S, now, EV_QPSTART, q | (1 << 24), -1)
    else:
        _start_qp(S, P, q, now)


@njit(cache=True)
def finish_node(S, P, v, now):
    """Node ``v`` finished at ``now``: record it and release its children."""
    S.cnt[C_NODES_DONE] += 1
    for i in range(complete(S, v, now)):
        calls.release(S, P, S.g_ready[i], now)


@njit(cache=True)
def dag_done_event(S, P, v, now):
    """A delay/compute/instant node's completion event."""
    if S.g_kind[v] == KIND_COMPUTE:
        h, t = next_compute(S, v, now)
        if h >= 0:
            push(S, t, EV_DAGDONE, h, -1)
    calls.finish_node(S, P, v, now)


@njit(cache=True)
def start_roots(S, P, now):
    """Release every node without dependencies."""
    for v in range(S.g_kind.shape[0]):
        if S.g_rem[v] == 0:
            calls.release(S, P, v, now)
