"""Where the time of an iteration goes: compute, exposed communication per group, idle.

For every rank, the iteration ``[0, T]`` is split into compute (its compute ops), exposed
communication (time in a communication op that no compute overlaps, attributed to the op's group;
where communication of several groups overlaps, the group earlier in :data:`GROUP_PRIORITY` gets
it) and idle (neither). A communication op on a rank spans from the moment its own dependencies
are done to the moment the collective is done on that rank, so waiting for a pipeline peer shows up
as exposed ``pp`` time, as SimAI reports it.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import polars as pl

__all__ = ["GROUP_PRIORITY", "op_intervals", "rank_breakdown", "iteration_breakdown"]

#: Attribution order where communication of several groups overlaps.
GROUP_PRIORITY = ("tp", "etp", "cp", "ep", "pp", "dp", "dp_cp", "edp")


def op_intervals(
    ops: pl.DataFrame, node_start_ps: np.ndarray, node_finish_ps: np.ndarray
) -> pl.DataFrame:
    """Start and end of every op on its rank (node ids of ops equal op ids).

    Compute ops span their node; a communication op starts when its deps are done (its node's
    start for compute; the latest dep finish for comm) and ends when its done-node finishes.
    """
    finish = node_finish_ps[: ops.height]
    dep_end = (
        ops.select("op_id", "deps")
        .explode("deps")
        .with_columns(
            pl.col("deps")
            .fill_null(-1)
            .map_batches(
                lambda s: pl.Series(
                    np.where(s.to_numpy() >= 0, finish[np.maximum(s.to_numpy(), 0)], 0)
                ),
                return_dtype=pl.Int64,
            )
            .alias("dep_finish")
        )
        .group_by("op_id")
        .agg(pl.col("dep_finish").max())
    )
    out = (
        ops.select("op_id", "rank", "kind", "group", "name", "phase")
        .join(dep_end, on="op_id", how="left")
        .sort("op_id")
    )
    start = np.where(
        out["kind"].to_numpy() == "compute",
        node_start_ps[: ops.height],
        out["dep_finish"].fill_null(0).to_numpy(),
    )
    return out.with_columns(pl.Series("start_ps", start), pl.Series("end_ps", finish)).drop(
        "dep_finish"
    )


@nb.njit(cache=True)
def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint union of intervals ``[starts, ends)``."""
    order = np.argsort(starts, kind="mergesort")
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
def _subtract(s: np.ndarray, e: np.ndarray, cs: np.ndarray, ce: np.ndarray) -> int:
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


def rank_breakdown(mine: pl.DataFrame, iteration_ps: int) -> dict[str, int]:
    """Compute, exposed communication per group, and idle time of one rank (picoseconds).

    ``mine`` holds the rank's rows of :func:`op_intervals`.
    """
    comp = mine.filter(pl.col("kind") == "compute")
    cs, ce = _union(comp["start_ps"].to_numpy(), comp["end_ps"].to_numpy())
    out = {"compute_ps": int((ce - cs).sum())}
    covered_s, covered_e = cs, ce
    for group in GROUP_PRIORITY:
        g = mine.filter((pl.col("kind") == "comm") & (pl.col("group") == group))
        if g.height == 0:
            continue
        gs, ge = _union(g["start_ps"].to_numpy(), g["end_ps"].to_numpy())
        out[f"exposed_{group}_ps"] = int(_subtract(gs, ge, covered_s, covered_e))
        covered_s, covered_e = _union(
            np.concatenate((covered_s, gs)), np.concatenate((covered_e, ge))
        )
    out["idle_ps"] = int(iteration_ps - (covered_e - covered_s).sum())
    return out


def iteration_breakdown(
    ops: pl.DataFrame, node_start_ps: np.ndarray, node_finish_ps: np.ndarray
) -> pl.DataFrame:
    """Breakdown of the critical rank (the one that finishes last) and the mean over ranks.

    Returns a table with one row per category and columns ``critical_rank_s``, ``mean_rank_s``
    and ``critical_share`` (fraction of the iteration).
    """
    iv = op_intervals(ops, node_start_ps, node_finish_ps)
    iteration = int(node_finish_ps.max())
    last = iv.group_by("rank").agg(pl.col("end_ps").max()).sort("end_ps", "rank")
    critical = int(last["rank"][-1])
    parts = iv.partition_by("rank", as_dict=True)
    ranks = sorted(int(k[0]) for k in parts)
    rows = [rank_breakdown(parts[(r,)], iteration) for r in ranks]
    keys = ["compute_ps"] + [f"exposed_{g}_ps" for g in GROUP_PRIORITY] + ["idle_ps"]
    keys = [k for k in keys if any(k in r for r in rows)]
    crit = rows[ranks.index(critical)]
    return pl.DataFrame(
        {
            "category": [k.removesuffix("_ps") for k in keys],
            "critical_rank_s": [crit.get(k, 0) / 1e12 for k in keys],
            "mean_rank_s": [float(np.mean([r.get(k, 0) for r in rows])) / 1e12 for k in keys],
            "critical_share": [crit.get(k, 0) / iteration if iteration else 0.0 for k in keys],
        }
    )
