"""What both engines' DAG executors share: the node arrays and the per-rank compute streams.

Each engine releases a DAG node when its dependency counter reaches 0 and records its start
and finish; the arrays for that (:func:`dag_runtime_arrays`, one naming for both kernels) and the
FIFO of compute nodes waiting for their rank's stream (:func:`stream_admit`,
:func:`stream_next`) live here once. How a released node starts (a timer, a QP, a fluid flow)
is each engine's own.

Both engines' field tables (:mod:`wormsim.netsim.packet.fields`, :mod:`wormsim.netsim.flow.fields`)
describe these arrays with the same entries, :data:`DAG_RUNTIME_DIMS` and
:data:`DAG_RUNTIME_FIELDS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from wormsim.collective.dag import KIND_COMPUTE, KIND_FLOW, DagArrays
from wormsim.netsim.common.field_spec import Dim, FieldSpec
from wormsim.netsim.common.jit import njit
from wormsim.netsim.fabric.topology import Topology

__all__ = [
    "DAG_RUNTIME_DIMS",
    "DAG_RUNTIME_FIELDS",
    "dag_runtime_arrays",
    "n_ranks",
    "admit",
    "next_compute",
    "complete",
    "stream_admit",
    "stream_next",
    "warm_once",
    "ADMIT_QUEUED",
    "ADMIT_FLOW",
]

ADMIT_QUEUED, ADMIT_FLOW = -1, -2
"""What :func:`admit` says besides a finish time: the node waits for its stream / is a flow."""

DAG_RUNTIME_DIMS: tuple[Dim, ...] = (
    Dim("dag_node", "DAG node"),
    Dim(
        "dag_offset",
        "CSR offset over the DAG nodes: one per node, plus one",
        extent=lambda s: s["dag_node"] + 1,
    ),
    Dim("dag_edge", "DAG edge: an entry of the children lists"),
    Dim("rank", "compute stream: a DAG rank (max rank + 1, at least 1)"),
)
"""The dimensions of the DAG executor's arrays (``sizes``: ``dag_node``, ``dag_edge``, ``rank``)."""


def _dag_field(
    name: str, dtype: type[np.generic], dim: str, unit: str, init: int | None, meaning: str
) -> FieldSpec:
    """A one-dimensional field of the "DAG" group."""
    return FieldSpec(name, dtype, (dim,), unit, meaning, init, "DAG")


_B = None  # init: built by :func:`dag_runtime_arrays`
# fmt: off
DAG_RUNTIME_FIELDS: tuple[FieldSpec, ...] = (
    _dag_field("g_kind", np.int64, "dag_node", "code", _B,
               "`KIND_FLOW`, `KIND_COMPUTE` or `KIND_DELAY`"),
    _dag_field("g_rank", np.int64, "dag_node", "id", _B, "compute: its rank (compute stream)"),
    _dag_field("g_dur_ps", np.int64, "dag_node", "ps", _B, "delay or compute duration"),
    _dag_field("g_rem", np.int64, "dag_node", "count", _B, "unfinished dependencies"),
    _dag_field("g_coff", np.int64, "dag_offset", "index", _B,
               "start of its children in `g_cidx`"),
    _dag_field("g_cidx", np.int64, "dag_edge", "id", _B, "children (DAG nodes)"),
    _dag_field("g_start_ps", np.int64, "dag_node", "ps", -1, "start time (-1 = never)"),
    _dag_field("g_finish_ps", np.int64, "dag_node", "ps", -1, "finish time (-1 = never)"),
    _dag_field("rk_busy", np.int8, "rank", "flag", 0, "compute stream busy"),
    _dag_field("rk_head", np.int64, "rank", "id", -1, "first compute node waiting (DAG node)"),
    _dag_field("rk_tail", np.int64, "rank", "id", -1, "last compute node waiting (DAG node)"),
    _dag_field("g_cnext", np.int64, "dag_node", "id", -1,
               "next compute node waiting on its stream"),
    _dag_field("g_ready", np.int64, "dag_node", "id", 0,
               "scratch: the children a finishing node released (see `complete`)"),
)
# fmt: on
"""The arrays of :func:`dag_runtime_arrays`, in its order, as field-table entries (group "DAG")."""


def n_ranks(dag: DagArrays) -> int:
    """Number of compute streams: the largest rank a node names, plus one (at least 1)."""
    return max(int(dag.rank.max()) + 1 if dag.n_nodes else 1, 1)


def dag_runtime_arrays(dag: DagArrays) -> dict[str, np.ndarray]:
    """The DAG executor's arrays (times ps, ``-1`` = not yet).

    ``g_kind, g_rank, g_dur_ps`` (the node), ``g_rem`` (dependencies still running), ``g_coff,
    g_cidx`` (children, CSR), ``g_start_ps, g_finish_ps``; per rank ``rk_busy, rk_head,
    rk_tail`` and per node ``g_cnext``: the compute stream and its FIFO of waiting nodes (a
    linked list).
    """
    n = dag.n_nodes
    i64 = np.int64
    ranks = n_ranks(dag)
    # the kernels never write the durations and the children: those are the DAG's own arrays
    return dict(
        g_kind=dag.kind.astype(i64),
        g_rank=dag.rank.astype(i64),
        g_dur_ps=dag.duration_ps.astype(i64, copy=False),
        g_rem=dag.dep_count.astype(i64).copy(),
        g_coff=dag.child_offsets.astype(i64, copy=False),
        g_cidx=dag.child_index.astype(i64, copy=False),
        g_start_ps=np.full(n, -1, i64),
        g_finish_ps=np.full(n, -1, i64),
        rk_busy=np.zeros(ranks, np.int8),
        rk_head=np.full(ranks, -1, i64),
        rk_tail=np.full(ranks, -1, i64),
        g_cnext=np.full(n, -1, i64),
        g_ready=np.zeros(n, i64),
    )


@njit(cache=True)
def stream_admit(S, v):
    """Compute node ``v`` was released: True if its rank's stream is free (start it now), else
    it is queued behind the stream's waiting nodes (False)."""
    r = S.g_rank[v]
    if not S.rk_busy[r]:
        return True
    S.g_cnext[v] = -1
    if S.rk_tail[r] >= 0:
        S.g_cnext[S.rk_tail[r]] = v
    else:
        S.rk_head[r] = v
    S.rk_tail[r] = v
    return False


@njit(cache=True)
def stream_next(S, v):
    """Compute node ``v`` finished: its rank's stream is free; the next waiting node (start it
    now) or ``-1``."""
    r = S.g_rank[v]
    S.rk_busy[r] = 0
    h = S.rk_head[r]
    if h >= 0:
        S.rk_head[r] = S.g_cnext[h]
        if S.rk_head[r] < 0:
            S.rk_tail[r] = -1
    return h


@njit(cache=True)
def admit(S, v, now):
    """Node ``v`` was released at ``now``: start it if it can run.

    Returns the time its completion is due (a delay, or a compute node whose stream is free:
    started here), ``ADMIT_QUEUED`` (a compute node now waiting for its stream) or
    ``ADMIT_FLOW`` (a flow, started at ``now``: the engine moves its bytes).
    """
    k = S.g_kind[v]
    if k == KIND_COMPUTE:
        if not stream_admit(S, v):
            return ADMIT_QUEUED
        S.rk_busy[S.g_rank[v]] = 1
    S.g_start_ps[v] = now
    if k == KIND_FLOW:
        return ADMIT_FLOW
    return now + S.g_dur_ps[v]


@njit(cache=True)
def next_compute(S, v, now):
    """Compute node ``v`` finished at ``now``: start the next node waiting for its stream.

    Returns ``(node, time its completion is due)``, or ``(-1, -1)`` if none was waiting.
    """
    h = stream_next(S, v)
    if h < 0:
        return -1, -1
    S.rk_busy[S.g_rank[h]] = 1
    S.g_start_ps[h] = now
    return h, now + S.g_dur_ps[h]


@njit(cache=True)
def complete(S, v, now):
    """Node ``v`` finished at ``now``: record it and count down its children's dependencies.

    Returns ``k``: ``S.g_ready[:k]`` are the children that are now released, in child order, for
    the engine to start (starting a node never finishes one at once in either engine, so the
    scratch is not reused before the caller has read it).
    """
    S.g_finish_ps[v] = now
    k = 0
    for j in range(S.g_coff[v], S.g_coff[v + 1]):
        c = S.g_cidx[j]
        S.g_rem[c] -= 1
        if S.g_rem[c] == 0:
            S.g_ready[k] = c
            k += 1
    return k


_WARMED: dict[str, float] = {}


def warm_once(engine: str, run: Callable[[DagArrays, Topology], None]) -> float:
    """Compile (or load from the cache) ``engine``'s kernels once per process by calling ``run``
    on :func:`~wormsim.netsim.common.warmup.tiny_scenario`; the seconds it took the first time, 0.0
    after."""
    if engine in _WARMED:
        return 0.0
    from wormsim.netsim.common.warmup import tiny_scenario

    t = time.perf_counter()
    run(*tiny_scenario())
    _WARMED[engine] = time.perf_counter() - t
    return _WARMED[engine]
