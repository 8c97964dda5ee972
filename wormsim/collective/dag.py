"""The flow DAG: the contract between the collective stage and netsim.

One table, one row per node. ``kind`` is ``flow`` (bytes from ``src`` to ``dst``), ``compute``
(``duration_ps`` on ``rank``) or ``delay`` (``duration_ps``, no resource). A node starts when all of
its ``deps`` have finished. Label columns (``op_id`` … ``group``) are for reporting only.

The engines do not read the table row by row: :func:`dag_to_arrays` compiles it into
structure-of-arrays form with a children CSR and dependency counters (:class:`DagArrays`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np
import polars as pl

from wormsim.errors import WormsimError
from wormsim.inputs import MAX_TIME_PS

__all__ = [
    "KIND_FLOW",
    "KIND_COMPUTE",
    "KIND_DELAY",
    "KIND_CODES",
    "DAG_SCHEMA",
    "DagArrays",
    "dag_to_arrays",
    "connection_ids",
    "scale_dag",
    "validate_dag",
    "check_dag_values",
    "check_flow_endpoints",
    "DagError",
]

KIND_FLOW = 0
KIND_COMPUTE = 1
KIND_DELAY = 2
KIND_CODES = {"flow": KIND_FLOW, "compute": KIND_COMPUTE, "delay": KIND_DELAY}

#: Column name -> polars dtype of ``dag.parquet``.
DAG_SCHEMA: dict[str, pl.DataType] = {
    "node_id": pl.Int64,
    "kind": pl.Utf8,
    "src": pl.Int32,  # flows: sending rank; -1 otherwise
    "dst": pl.Int32,  # flows: receiving rank; -1 otherwise
    "rank": pl.Int32,  # compute: the rank whose stream runs it; -1 otherwise
    "size_bytes": pl.Int64,
    "duration_ps": pl.Int64,
    "deps": pl.List(pl.Int64),
    # labels for reporting
    "op_id": pl.Int64,
    "collective": pl.Utf8,
    "algorithm": pl.Utf8,
    "step": pl.Int32,
    "channel": pl.Int32,
    "phase": pl.Utf8,
    "layer": pl.Int32,
    "microbatch": pl.Int32,
    "group": pl.Utf8,
}


class DagError(WormsimError):
    """The DAG breaks its contract (cycle, dangling dependency, bad field)."""


@dataclass(frozen=True)
class DagArrays:
    """Structure-of-arrays form of the DAG, as the engines consume it.

    Node ``i`` is row ``i`` (node ids are dense, ``0..n-1``).

    Attributes
    ----------
    kind : int8[n]
        ``KIND_FLOW``, ``KIND_COMPUTE`` or ``KIND_DELAY``.
    src, dst : int32[n]
        Ranks of a flow's endpoints (``-1`` for other kinds).
    rank : int32[n]
        Rank of a compute node (``-1`` for other kinds).
    size_bytes, duration_ps : int64[n]
        Bytes of a flow; duration of a compute or delay node.
    dep_count : int32[n]
        Number of dependencies; a node is released when this many have finished.
    child_offsets : int64[n+1], child_index : int64[m]
        CSR of the reverse edges: the children of node ``i`` are
        ``child_index[child_offsets[i]:child_offsets[i+1]]``.
    connection : int64[n] or None
        The network connection (queue pair) each flow travels on, ``-1`` for other kinds: one
        per (src, dst, group, channel), as NCCL keeps one QP per peer and channel of a
        communicator, so the flows of one connection take one ECMP path. ``None``: each flow
        is its own connection (HPCC scenario files).
    """

    kind: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    rank: np.ndarray
    size_bytes: np.ndarray
    duration_ps: np.ndarray
    dep_count: np.ndarray
    child_offsets: np.ndarray
    child_index: np.ndarray
    connection: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.kind.shape[0])


def scale_dag(dag: pl.DataFrame, factor: float) -> pl.DataFrame:
    """The DAG with every flow's bytes (at least 1) and every duration multiplied by ``factor``.

    A smaller copy of an iteration for quick cross-checks: the same schedule, contention
    pattern and compute-to-communication ratio, ``factor`` times the bytes and time.

    Examples
    --------
    >>> d = pl.DataFrame({"kind": ["flow", "compute"], "size_bytes": [1000, 0],
    ...                   "duration_ps": [0, 500]})
    >>> scale_dag(d, 0.1).rows()
    [('flow', 100, 0), ('compute', 0, 50)]
    """
    if factor == 1.0:
        return dag
    return dag.with_columns(
        pl.when(pl.col("kind") == "flow")
        .then((pl.col("size_bytes") * factor).round().cast(pl.Int64).clip(lower_bound=1))
        .otherwise(pl.col("size_bytes"))
        .alias("size_bytes"),
        (pl.col("duration_ps") * factor).round().cast(pl.Int64).alias("duration_ps"),
    )


def dag_to_arrays(dag: pl.DataFrame) -> DagArrays:
    """Compile a DAG table into :class:`DagArrays`.

    Parameters
    ----------
    dag : polars.DataFrame
        A table with at least ``node_id, kind, src, dst, rank, size_bytes, duration_ps, deps``;
        ``node_id`` must be ``0..n-1`` in row order.

    Returns
    -------
    DagArrays
    """
    n = dag.height
    node_id = dag["node_id"].to_numpy()
    if n and not np.array_equal(node_id, np.arange(n, dtype=node_id.dtype)):
        raise DagError("node_id must be 0..n-1 in row order")
    kind = dag["kind"].replace_strict(KIND_CODES, return_dtype=pl.Int8).to_numpy()
    deps = dag["deps"]
    dep_count = deps.list.len().fill_null(0).to_numpy().astype(np.int32)
    # Empty lists explode to nulls; dropping them leaves exactly sum(dep_count) parents.
    parent = deps.explode().drop_nulls().to_numpy().astype(np.int64)
    child = np.repeat(np.arange(n, dtype=np.int64), dep_count)
    if parent.shape[0] != child.shape[0]:
        raise DagError("deps must not contain nulls")
    if parent.size and (parent.min() < 0 or parent.max() >= n):
        raise DagError("a dependency names a node id that does not exist")
    order = np.argsort(parent, kind="stable")
    child_index = child[order].astype(np.int64)
    counts = np.bincount(parent, minlength=n)
    child_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=child_offsets[1:])
    arrays = DagArrays(
        kind=kind.astype(np.int8),
        src=dag["src"].fill_null(-1).to_numpy().astype(np.int32),
        dst=dag["dst"].fill_null(-1).to_numpy().astype(np.int32),
        rank=dag["rank"].fill_null(-1).to_numpy().astype(np.int32),
        size_bytes=dag["size_bytes"].fill_null(0).to_numpy().astype(np.int64),
        duration_ps=dag["duration_ps"].fill_null(0).to_numpy().astype(np.int64),
        dep_count=dep_count,
        child_offsets=child_offsets,
        child_index=child_index,
        connection=connection_ids(dag, kind),
    )
    check_dag_values(arrays)
    return arrays


def connection_ids(
    dag: pl.DataFrame, kind: np.ndarray, within: str | None = None
) -> np.ndarray | None:
    """Dense connection id per flow over (src, dst, group, channel), ``-1`` for other nodes;
    ``None`` when the table has no ``group`` or ``channel`` labels. With ``within`` (a column),
    the ids are numbered separately within each of its values, as each part would number them
    in a table of its own."""
    if "group" not in dag.columns or "channel" not in dag.columns:
        return None
    rank = pl.struct(
        pl.col("src").fill_null(-1),
        pl.col("dst").fill_null(-1),
        pl.col("group").fill_null(""),
        pl.col("channel").fill_null(-1),
    ).rank("dense")
    if within is not None:
        rank = rank.over(within)
    ids = dag.select(rank.alias("c"))["c"].to_numpy().astype(np.int64)
    return np.where(kind == KIND_CODES["flow"], ids, -1)


def check_flow_endpoints(
    kind: np.ndarray, src: np.ndarray, dst: np.ndarray, error: type[WormsimError] = DagError
) -> None:
    """Refuse a flow from a rank to itself (it would finish in 0 ns, silently).

    Raises
    ------
    WormsimError
        Of class ``error``, naming the first such DAG node.
    """
    bad = np.flatnonzero((kind == KIND_FLOW) & (src == dst))
    if bad.size:
        v = int(bad[0])
        raise error(
            f"DAG node {v} is a flow from rank {int(src[v])} to itself ({bad.size} such flows); "
            "a flow needs two different ranks, drop it or use a compute/delay node"
        )


def check_dag_values(arrays: DagArrays) -> None:
    """Check the per-node values: flow endpoints, sizes, durations (before any simulation).

    Raises
    ------
    DagError
        Naming the first bad node, its value and the rule.
    """
    check_flow_endpoints(arrays.kind, arrays.src, arrays.dst)
    is_flow = arrays.kind == KIND_FLOW
    for name, values, rule in (
        ("size_bytes", arrays.size_bytes, "must be >= 0"),
        ("duration_ps", arrays.duration_ps, f"must be in 0..{MAX_TIME_PS} (about 53 days)"),
    ):
        ok = (values >= 0) & (values <= MAX_TIME_PS)
        if not ok.all():
            v = int(np.flatnonzero(~ok)[0])
            raise DagError(f"DAG node {v}: {name} is {int(values[v])}; it {rule}")
    flows = np.flatnonzero(is_flow & ((arrays.src < 0) | (arrays.dst < 0)))
    if flows.size:
        raise DagError(f"DAG node {int(flows[0])} is a flow without src/dst ranks; set both")


@nb.njit(cache=True)
def _reachable_count(
    dep_count: np.ndarray, child_offsets: np.ndarray, child_index: np.ndarray
) -> int:
    """Number of nodes Kahn's algorithm can release (all of them iff the DAG is acyclic)."""
    n = dep_count.shape[0]
    remaining = dep_count.astype(np.int64)
    stack = np.empty(n, np.int64)
    top = 0
    for i in range(n):
        if remaining[i] == 0:
            stack[top] = i
            top += 1
    seen = 0
    while top > 0:
        top -= 1
        u = stack[top]
        seen += 1
        for j in range(child_offsets[u], child_offsets[u + 1]):
            v = child_index[j]
            remaining[v] -= 1
            if remaining[v] == 0:
                stack[top] = v
                top += 1
    return seen


def validate_dag(arrays: DagArrays) -> None:
    """Check that the DAG is acyclic, i.e. every node is reachable by Kahn's algorithm.

    Raises
    ------
    DagError
        If some nodes can never start (a cycle).
    """
    seen = _reachable_count(arrays.dep_count, arrays.child_offsets, arrays.child_index)
    if seen != arrays.n_nodes:
        raise DagError(f"{arrays.n_nodes - seen} DAG nodes can never start: the DAG has a cycle")
