"""Where the time of an iteration goes, on every rank and along the critical path.

**Per rank.** The iteration ``[0, T]`` of a rank is split, without overlap or remainder, into

* ``compute``: its compute ops;
* ``exposed_<dim>`` for the parallel dimensions :data:`DIMS` (``tp`` … ``edp``): time in a
  communication op of that dimension that no compute (and no dimension earlier in
  :data:`DIMS`) covers;
* ``bubble``: time a rank waits in a pipeline op for another stage: a receive for its peer
  stage to send, the first and last stages' embedding-gradient all-reduce for each other (the
  pipeline bubble of 1F1B and interleaved schedules);
* ``idle``: none of these (before its first op, after its last, or gaps between).

so ``compute + Σ exposed + bubble + idle = T`` on every rank. ``overlap`` (not part of the sum)
is the communication time compute hides.

A communication op on a rank spans from the moment its own dependencies are done (*ready*) to the
moment the collective is done on that rank. Its *sync* point is when it can start: for a
collective, when the last member is ready; for a receive, when the matching send is ready. From
ready to sync a pipeline op is waiting for another stage (bubble); any other collective is
waiting for its slowest member, which counts as its dimension's exposed time, as SimAI reports
it.

**Critical path** (:func:`critical_path`). Walking back from the node that finishes last, every
node's *binding* predecessor is the dependency that finished last, or, for a compute node that
started later than that, the compute node before it on the same stream. Each node on the path
owns the time from its binding predecessor's finish to its own finish, so the path's segments sum
to ``T`` exactly.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import polars as pl

from wormsim.humanize import human_time
from wormsim.units import PS_PER_US_F

__all__ = [
    "DIMS",
    "DIM_OF_GROUP",
    "GROUP_PRIORITY",
    "union_intervals",
    "uncovered_length",
    "op_intervals",
    "rank_breakdown",
    "rank_breakdown_table",
    "critical_path",
    "critical_path_breakdown",
    "iteration_breakdown",
    "slowest_rank_reason",
]

#: Parallel dimensions in attribution order (where several overlap, the earlier one gets it).
DIMS = ("tp", "cp", "ep", "pp", "dp", "edp")

#: The dimension every ops ``group`` reports under (expert-TP with TP, DP×CP with DP).
DIM_OF_GROUP = {
    "tp": "tp",
    "etp": "tp",
    "cp": "cp",
    "ep": "ep",
    "pp": "pp",
    "dp": "dp",
    "dp_cp": "dp",
    "edp": "edp",
}

#: Groups in attribution order (kept for callers that list groups).
GROUP_PRIORITY = ("tp", "etp", "cp", "ep", "pp", "dp", "dp_cp", "edp")

#: Categories of :func:`rank_breakdown` in the order they are reported; they sum to the iteration.
CATEGORIES = ("compute", *(f"exposed_{d}" for d in DIMS), "bubble", "idle")


def _finish_of(deps: pl.Series, finish: np.ndarray) -> pl.Series:
    arr = deps.fill_null(-1).to_numpy()
    return pl.Series(np.where(arr >= 0, finish[np.maximum(arr, 0)], 0))


def op_intervals(
    ops: pl.DataFrame, node_start_ps: np.ndarray, node_finish_ps: np.ndarray
) -> pl.DataFrame:
    """Start, sync point and end of every op on its rank (node ids of ops equal op ids).

    Returns the ops' ``op_id, rank, kind, group, name, phase, collective, coll_id`` with
    ``start_ps`` (compute: its node's start; comm: ready, the latest dependency finish),
    ``sync_ps`` (comm: see the module docstring, clipped to the op; compute: its start) and
    ``end_ps`` (its node's finish).
    """
    finish = node_finish_ps[: ops.height]
    dep_end = (
        ops.select("op_id", "deps")
        .explode("deps")
        .with_columns(
            pl.col("deps")
            .map_batches(lambda s: _finish_of(s, finish), return_dtype=pl.Int64)
            .alias("dep_finish")
        )
        .group_by("op_id")
        .agg(pl.col("dep_finish").max())
    )
    out = (
        ops.select("op_id", "rank", "kind", "group", "name", "phase", "collective", "coll_id")
        .join(dep_end, on="op_id", how="left")
        .sort("op_id")
    )
    is_comp = out["kind"].to_numpy() == "compute"
    start = np.where(
        is_comp, node_start_ps[: ops.height], out["dep_finish"].fill_null(0).to_numpy()
    )
    out = out.with_columns(pl.Series("start_ps", start), pl.Series("end_ps", finish)).drop(
        "dep_finish"
    )
    # sync: collectives wait for their last member; a recv for its send; a send for nobody
    ready = pl.col("start_ps")
    member_last = ready.max().over("coll_id")
    send_ready = (
        pl.when(pl.col("collective") == "send").then(ready).otherwise(None).max().over("coll_id")
    )
    sync = (
        pl.when(pl.col("kind") == "compute")
        .then(ready)
        .when(pl.col("collective") == "send")
        .then(ready)
        .when(pl.col("collective") == "recv")
        .then(send_ready.fill_null(ready))
        .otherwise(member_last)
    )
    return out.with_columns(
        pl.max_horizontal(pl.min_horizontal(sync, pl.col("end_ps")), ready).alias("sync_ps")
    ).select(
        "op_id",
        "rank",
        "kind",
        "group",
        "name",
        "phase",
        "collective",
        "coll_id",
        "start_ps",
        "sync_ps",
        "end_ps",
    )


def union_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint union of intervals ``[starts, ends)``."""
    # sorted here, not in the kernel, where a sort would compile numba's mergesort
    return _union_sorted(starts, ends, np.argsort(starts, kind="stable"))


@nb.njit(cache=True)
def _union_sorted(
    starts: np.ndarray, ends: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`union_intervals` with the intervals' order by start (stable) given."""
    out_s = np.empty(starts.shape[0], np.int64)
    out_e = np.empty(starts.shape[0], np.int64)
    n = 0
    for i in order:
        a, b = starts[i], ends[i]
        if b <= a:
            continue
        if n > 0 and a <= out_e[n - 1]:
            if b > out_e[n - 1]:
                out_e[n - 1] = b
        else:
            out_s[n] = a
            out_e[n] = b
            n += 1
    return out_s[:n], out_e[:n]


@nb.njit(cache=True)
def uncovered_length(s: np.ndarray, e: np.ndarray, cs: np.ndarray, ce: np.ndarray) -> int:
    """Length of the union (s, e) minus the union (cs, ce); both sorted and disjoint."""
    total = 0
    j = 0
    for i in range(s.shape[0]):
        a, b = s[i], e[i]
        cur = a
        while j < cs.shape[0] and ce[j] <= cur:
            j += 1
        k = j
        while cur < b:
            if k >= cs.shape[0] or cs[k] >= b:
                total += b - cur
                break
            if cs[k] > cur:
                total += cs[k] - cur
            if ce[k] > cur:
                cur = ce[k]
            k += 1
    return total


class _Cover:
    """The union of intervals claimed so far on one rank."""

    def __init__(self, s: np.ndarray, e: np.ndarray) -> None:
        self.s, self.e = union_intervals(s, e)

    def claim(self, s: np.ndarray, e: np.ndarray) -> int:
        """Add intervals; return the length they add that was not covered before."""
        us, ue = union_intervals(s, e)
        new = int(uncovered_length(us, ue, self.s, self.e))
        self.s, self.e = union_intervals(np.concatenate((self.s, us)), np.concatenate((self.e, ue)))
        return new

    @property
    def length(self) -> int:
        return int((self.e - self.s).sum())


def _arr(df: pl.DataFrame, col: str) -> np.ndarray:
    return df[col].to_numpy().astype(np.int64)


#: Code of each dimension of :data:`DIMS` (its position) in the per-rank arrays.
_DIM_CODE = {d: i for i, d in enumerate(DIMS)}


def _dim_codes(intervals: pl.DataFrame) -> np.ndarray:
    """Per interval the :data:`DIMS` position its ``group`` reports under (-1: no group)."""
    return (
        intervals.select(
            pl.col("group")
            .replace_strict(DIM_OF_GROUP, default="dp")
            .replace_strict(_DIM_CODE, default=-1, return_dtype=pl.Int64)
            .fill_null(-1)
        )
        .to_series()
        .to_numpy()
    )


def _breakdown(
    is_comp: np.ndarray,
    is_comm: np.ndarray,
    dim: np.ndarray,
    start: np.ndarray,
    sync: np.ndarray,
    end: np.ndarray,
    iteration_ps: int,
) -> dict[str, int]:
    """:func:`rank_breakdown` over one rank's intervals as arrays (``dim``: :data:`DIMS`
    position)."""
    cover = _Cover(start[is_comp], end[is_comp])
    compute_only = (cover.s.copy(), cover.e.copy())
    out = {"compute_ps": cover.length}
    transfer_s, transfer_e = [], []
    pp_wait = is_comm & (dim == _DIM_CODE["pp"])
    for k, d in enumerate(DIMS):
        g = is_comm & (dim == k)
        if not g.any():
            continue
        # waiting in a pipeline op is bubble; every other op counts from its ready point
        s = sync[g] if d == "pp" else start[g]
        e = end[g]
        transfer_s.append(sync[g])
        transfer_e.append(e)
        out[f"exposed_{d}_ps"] = cover.claim(s, e)
    out["bubble_ps"] = cover.claim(start[pp_wait], sync[pp_wait])
    out["idle_ps"] = int(iteration_ps - cover.length)
    if transfer_s:
        ts, te = union_intervals(np.concatenate(transfer_s), np.concatenate(transfer_e))
        out["overlap_ps"] = int((te - ts).sum() - uncovered_length(ts, te, *compute_only))
    else:
        out["overlap_ps"] = 0
    return out


def _columns(intervals: pl.DataFrame) -> tuple[np.ndarray, ...]:
    kind = intervals["kind"]
    return (
        (kind == "compute").fill_null(False).to_numpy(),
        (kind == "comm").fill_null(False).to_numpy(),
        _dim_codes(intervals),
        _arr(intervals, "start_ps"),
        _arr(intervals, "sync_ps"),
        _arr(intervals, "end_ps"),
    )


def rank_breakdown(mine: pl.DataFrame, iteration_ps: int) -> dict[str, int]:
    """:data:`CATEGORIES` and ``overlap`` of one rank, in picoseconds (``<category>_ps``).

    ``mine`` holds the rank's rows of :func:`op_intervals`. Categories the rank has no time in
    are omitted except ``compute``, ``bubble`` and ``idle``.
    """
    return _breakdown(*_columns(mine), iteration_ps)


def rank_breakdown_table(intervals: pl.DataFrame, iteration_ps: int) -> pl.DataFrame:
    """:func:`rank_breakdown` of every rank: one row per rank, categories in ps.

    Columns: ``rank``, ``finish_ps`` (its last op's end), every category of :data:`CATEGORIES`
    as ``<category>_ps`` (0 where absent), ``overlap_ps``.
    """
    keys = [f"{c}_ps" for c in CATEGORIES] + ["overlap_ps"]
    rank = intervals["rank"].to_numpy()
    order = np.argsort(rank, kind="stable")  # each rank's rows together, in table order
    cols = [c[order] for c in _columns(intervals)]
    rank = rank[order]
    cuts = np.flatnonzero(rank[1:] != rank[:-1]) + 1
    bounds = np.concatenate(([0], cuts, [rank.size])) if rank.size else np.zeros(1, np.int64)
    rows = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        mine = [c[a:b] for c in cols]
        row = _breakdown(*mine, iteration_ps)
        rows.append({"rank": int(rank[a]), "finish_ps": int(mine[5].max()), **row})
    table = pl.DataFrame(rows, infer_schema_length=None)
    if not rows:
        table = pl.DataFrame(
            {"rank": [], "finish_ps": []}, schema={"rank": pl.Int64, "finish_ps": pl.Int64}
        )
    for k in keys:
        if k not in table.columns:
            table = table.with_columns(pl.lit(0, pl.Int64).alias(k))
    return table.select("rank", "finish_ps", *keys).fill_null(0)


@nb.njit(cache=True)
def _walk_back(
    offsets: np.ndarray,
    deps: np.ndarray,
    start: np.ndarray,
    finish: np.ndarray,
    is_compute: np.ndarray,
    stream_prev: np.ndarray,
) -> np.ndarray:
    """Node ids of the critical path, last node first."""
    # the first node that finishes last (np.argmax's choice), and the path in an array (a
    # chain of distinct nodes): np.argmax and a list cost numba compile time
    v = 0
    for i in range(finish.shape[0]):
        if finish[i] > finish[v]:
            v = i
    path = np.empty(finish.shape[0], np.int64)
    path[0] = v
    m = 1
    while True:
        best, best_f = -1, -1
        for k in range(offsets[v], offsets[v + 1]):
            d = deps[k]
            if finish[d] > best_f:
                best, best_f = d, finish[d]
        if is_compute[v] and stream_prev[v] >= 0 and finish[stream_prev[v]] > best_f:
            best = stream_prev[v]
        if best < 0:
            break
        path[m] = best
        m += 1
        v = best
    return path[:m].copy()


def critical_path(dag: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame:
    """The chain of nodes that decides the iteration time, first node first.

    Returns ``node_id, kind, rank, group, op_id, start_ps, finish_ps, owned_ps`` where
    ``owned_ps`` is the time from the binding predecessor's finish (0 for the first node) to
    the node's finish; the owned times sum to the iteration time.
    """
    n = dag.height
    lens = dag["deps"].list.len().fill_null(0).to_numpy().astype(np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    flat = dag["deps"].explode().drop_nulls().to_numpy().astype(np.int64)
    start = nodes["start_ps"].to_numpy().astype(np.int64)
    finish = nodes["finish_ps"].to_numpy().astype(np.int64)
    is_compute = (dag["kind"] == "compute").to_numpy()
    # previous compute node on the same stream: by start time within the rank
    stream_prev = np.full(n, -1, np.int64)
    comp = np.flatnonzero(is_compute)
    if comp.size:
        idx = np.lexsort((start[comp], dag["rank"].to_numpy()[comp]))
        rank, order = dag["rank"].to_numpy()[comp][idx], comp[idx]
        same = rank[1:] == rank[:-1]
        stream_prev[order[1:][same]] = order[:-1][same]
    path = _walk_back(offsets, flat, start, finish, is_compute, stream_prev)[::-1]
    fin = finish[path]
    owned = np.diff(np.concatenate(([0], fin)))
    return (
        dag[path]
        .select("node_id", "kind", "rank", "src", "group", "op_id")
        .with_columns(
            pl.Series("start_ps", start[path]),
            pl.Series("finish_ps", fin),
            pl.Series("owned_ps", owned),
        )
    )


def critical_path_breakdown(path: pl.DataFrame) -> dict[str, int]:
    """Time the critical path spends per category (ps): compute nodes are ``compute``; flows,
    collective completions and gates are ``exposed_<dim>`` of their group."""
    cat = (
        pl.when(pl.col("kind") == "compute")
        .then(pl.lit("compute"))
        .otherwise(
            pl.lit("exposed_")
            + pl.col("group").replace_strict(DIM_OF_GROUP, default="dp", return_dtype=pl.String)
        )
    )
    sums = path.group_by(cat.alias("category")).agg(pl.col("owned_ps").sum())
    return {f"{c}_ps": int(v) for c, v in sums.iter_rows()}


def iteration_breakdown(
    ops: pl.DataFrame,
    node_start_ps: np.ndarray,
    node_finish_ps: np.ndarray,
    path: pl.DataFrame | None = None,
    table: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Breakdown of the critical rank (the one that finishes last), the mean over ranks and,
    with ``path`` (:func:`critical_path`), the critical path.

    ``table`` is :func:`rank_breakdown_table` of these times if the caller has it already
    (computed otherwise).

    Returns one row per category of :data:`CATEGORIES` that any rank has time in, plus
    ``overlap``: ``category``, ``critical_rank_us``, ``critical_rank_pct`` (of the iteration),
    ``mean_rank_us`` and, with a path, ``critical_path_us``, ``critical_path_pct``. The rows
    other than ``overlap`` sum to the iteration time.
    """
    iteration = int(node_finish_ps.max()) if node_finish_ps.size else 0
    if table is None:
        table = rank_breakdown_table(op_intervals(ops, node_start_ps, node_finish_ps), iteration)
    critical = int(table.sort("finish_ps", "rank")["rank"][-1])
    crit = table.filter(pl.col("rank") == critical).row(0, named=True)
    keys = [f"{c}_ps" for c in CATEGORIES]
    keys = [k for k in keys if k in ("compute_ps", "idle_ps") or table[k].sum() > 0]
    keys.append("overlap_ps")
    scale = 100.0 / iteration if iteration else 0.0
    cols: dict[str, list] = {
        "category": [k.removesuffix("_ps") for k in keys],
        "critical_rank_us": [crit[k] / PS_PER_US_F for k in keys],
        "critical_rank_pct": [crit[k] * scale for k in keys],
        "mean_rank_us": [float(table[k].mean()) / PS_PER_US_F for k in keys],
    }
    if path is not None:
        on_path = critical_path_breakdown(path)
        cols["critical_path_us"] = [on_path.get(k, 0) / PS_PER_US_F for k in keys]
        cols["critical_path_pct"] = [on_path.get(k, 0) * scale for k in keys]
    return pl.DataFrame(cols)


def slowest_rank_reason(table: pl.DataFrame, stage_of_rank: dict[int, int] | None = None) -> str:
    """One sentence: which rank finishes last and the category where it most exceeds the mean.

    ``table`` is :func:`rank_breakdown_table`.
    """
    last = table.sort("finish_ps", "rank").row(-1, named=True)
    keys = [f"{c}_ps" for c in CATEGORIES if c != "idle"]
    excess = {k: last[k] - float(table[k].mean()) for k in keys}
    worst = max(excess, key=lambda k: excess[k])
    total = max(int(last["finish_ps"]), 1)
    where = f" (pipeline stage {stage_of_rank[last['rank']]})" if stage_of_rank else ""
    biggest = max(keys, key=lambda k: last[k])
    if excess[worst] <= 0:
        return (
            f"rank {last['rank']}{where} finishes last at {human_time(last['finish_ps'], 4)}; "
            f"its time is like every rank's, most of it {biggest.removesuffix('_ps')} "
            f"({100 * last[biggest] / total:.1f} %)"
        )
    return (
        f"rank {last['rank']}{where} finishes last at {human_time(last['finish_ps'], 4)}: it "
        f"spends {human_time(excess[worst], 4)} more than the mean rank in "
        f"{worst.removesuffix('_ps')} ({100 * last[worst] / total:.1f} % of its iteration); "
        f"most of its time is {biggest.removesuffix('_ps')} ({100 * last[biggest] / total:.1f} %)"
    )
