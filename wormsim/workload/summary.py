"""Figures of an ops table: traffic per parallel dimension, compute time, pipeline bubble."""

from __future__ import annotations

import polars as pl

from wormsim.units import PS_PER_S_F

from .timeline import compute_timeline

__all__ = ["traffic_by_group", "workload_summary"]


def traffic_by_group(ops: pl.DataFrame) -> pl.DataFrame:
    """Per parallel dimension (group) and collective: op counts and bytes per rank.

    ``per_rank_bytes`` is the mean over the ranks that take part of the summed op sizes (the α-β
    buffer sizes, see :mod:`wormsim.workload.ops`); ``per_rank_ops_count`` likewise.
    """
    comm = ops.lazy().filter(pl.col("kind") == "comm")
    per_rank = comm.group_by("group", "collective", "rank").agg(
        pl.len().alias("ops"), pl.col("size_bytes").sum().alias("bytes")
    )
    return (
        per_rank.group_by("group", "collective")
        .agg(
            pl.col("rank").n_unique().alias("ranks_count"),
            pl.col("ops").mean().alias("per_rank_ops_count"),
            pl.col("bytes").mean().alias("per_rank_bytes"),
            pl.col("bytes").sum().alias("total_bytes"),
        )
        .sort("group", "collective")
        .collect()
    )


def workload_summary(ops: pl.DataFrame) -> dict[str, float]:
    """Headline figures: ranks, ops, compute time per rank, network-free iteration, bubble.

    Every key names its unit (:mod:`wormsim.analysis.units`): ``_count``, ``_s``, ``_pct``.
    """
    tl = compute_timeline(ops)
    return {
        "ranks_count": int(ops["rank"].n_unique()),
        "ops_count": int(ops.height),
        "compute_ops_count": int((ops["kind"] == "compute").sum()),
        "comm_ops_count": int((ops["kind"] == "comm").sum()),
        "compute_per_rank_max_s": float(tl.busy_ps.max()) / PS_PER_S_F,
        "compute_per_rank_mean_s": float(tl.busy_ps.mean()) / PS_PER_S_F,
        "iteration_without_network_s": tl.iteration_ps / PS_PER_S_F,
        "bubble_fraction_pct": 100.0 * tl.bubble_fraction,
    }
