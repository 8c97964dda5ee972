"""Figures of an ops table: traffic per parallel dimension, compute time, pipeline bubble."""

from __future__ import annotations

import polars as pl

from .timeline import compute_timeline

__all__ = ["traffic_by_group", "workload_summary"]


def traffic_by_group(ops: pl.DataFrame) -> pl.DataFrame:
    """Per parallel dimension (group) and collective: op counts and bytes per rank.

    ``bytes_per_rank`` is the mean over the ranks that take part of the summed op sizes (the α-β
    buffer sizes, see :mod:`wormsim.workload.ops`); ``ops_per_rank`` likewise.
    """
    comm = ops.lazy().filter(pl.col("kind") == "comm")
    per_rank = comm.group_by("group", "collective", "rank").agg(
        pl.len().alias("ops"), pl.col("size_bytes").sum().alias("bytes")
    )
    return (
        per_rank.group_by("group", "collective")
        .agg(
            pl.col("rank").n_unique().alias("ranks"),
            pl.col("ops").mean().alias("ops_per_rank"),
            pl.col("bytes").mean().alias("bytes_per_rank"),
            pl.col("bytes").sum().alias("total_bytes"),
        )
        .sort("group", "collective")
        .collect()
    )


def workload_summary(ops: pl.DataFrame) -> dict[str, float]:
    """Headline figures: ranks, ops, compute time per rank, network-free iteration, bubble."""
    tl = compute_timeline(ops)
    return {
        "ranks": int(ops["rank"].n_unique()),
        "ops": int(ops.height),
        "compute_ops": int((ops["kind"] == "compute").sum()),
        "comm_ops": int((ops["kind"] == "comm").sum()),
        "compute_s_per_rank_max": float(tl.busy_ps.max()) / 1e12,
        "compute_s_per_rank_mean": float(tl.busy_ps.mean()) / 1e12,
        "iteration_s_without_network": tl.iteration_ps / 1e12,
        "bubble_fraction": tl.bubble_fraction,
    }
