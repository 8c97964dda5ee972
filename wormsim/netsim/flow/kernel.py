"""The flow engine's event loop and DAG executor.

Delay nodes finish ``duration`` after release; compute nodes run one at a time per rank, FIFO
in release order; flows attach to their resources and are re-rated with every batch of starts
and drains at one simulated time (:mod:`wormsim.netsim.flow.maxmin`); 0-byte flows finish at
once. Times ps.
"""

from __future__ import annotations

from wormsim.collective.dag import KIND_COMPUTE
from wormsim.netsim.common.dag_runtime import ADMIT_FLOW, admit, complete, next_compute
from wormsim.netsim.common.flow_plan import FT_FABRIC, FT_NVLINK
from wormsim.netsim.common.jit import njit
from wormsim.netsim.flow.maxmin import drain, rerate, start_flow
from wormsim.netsim.flow.state import (
    C_ACTIVE,
    C_BATCHES,
    C_DONE,
    C_INITED,
    C_INSTANT,
    C_LOG_N,
    C_NET_STARTED,
    C_NOW,
    C_NSEED,
    C_NV_STARTED,
    C_RECORD,
)
from wormsim.netsim.flow.timers import (
    I64_MAX,
    next_drain,
    next_timer,
    pop_drain,
    pop_timer,
    push_timer,
)

__all__ = ["kernel"]


@njit(cache=True)
def _release(S, v, now):
    """All dependencies of ``v`` are done: start it."""
    t = admit(S, v, now)
    if t >= 0:
        push_timer(S, t, v)
    if t != ADMIT_FLOW:
        return
    ft = S.f_type[v]
    if ft == FT_FABRIC or ft == FT_NVLINK:
        if ft == FT_FABRIC:
            S.cnt[C_NET_STARTED] += 1
        else:
            S.cnt[C_NV_STARTED] += 1
        start_flow(S, v, now)
    else:
        S.cnt[C_INSTANT] += 1
        push_timer(S, now, v)


@njit(cache=True)
def _node_done(S, v, now):
    if S.g_kind[v] == KIND_COMPUTE:
        h, t = next_compute(S, v, now)
        if h >= 0:
            push_timer(S, t, h)
    S.cnt[C_DONE] += 1
    for i in range(complete(S, v, now)):
        _release(S, S.g_ready[i], now)


@njit(cache=True)
def kernel(S, t_stop, b_stop):
    """Run until the DAG is done (0), ``t_stop`` is passed or the batch counter reaches
    ``b_stop`` (1; the next call carries on exactly where this one stopped) or the rate log is
    full (2)."""
    if S.cnt[C_INITED] == 0:
        S.cnt[C_INITED] = 1
        S.cnt[C_BATCHES] += 1
        for v in range(S.g_kind.shape[0]):
            if S.g_rem[v] == 0:
                _release(S, v, 0)
        # instant/zero-delay roots are processed by the loop; rate the flows started at 0
        S.cnt[C_NOW] = 0
    while True:
        tt = next_timer(S)
        ft = next_drain(S)
        now = min(tt, ft)
        if S.cnt[C_NSEED] > 0 and S.cnt[C_NOW] < now:
            # changes made at C_NOW (roots) that are not yet rated
            now = S.cnt[C_NOW]
        if now == I64_MAX:
            return 0
        if now > t_stop or S.cnt[C_BATCHES] >= b_stop:
            return 1
        if S.cnt[C_RECORD] and S.log_t_ps.shape[0] - S.cnt[C_LOG_N] < 2 * S.cnt[C_ACTIVE] + 64:
            return 2
        S.cnt[C_NOW] = now
        while True:
            busy = False
            while next_timer(S) == now:
                v = pop_timer(S)
                _node_done(S, v, now)
                busy = True
            while next_drain(S) == now:
                v = pop_drain(S)
                drain(S, v, now)
                busy = True
            if not busy:
                break
        if S.cnt[C_NSEED] > 0:
            rerate(S, now)
        S.cnt[C_BATCHES] += 1
