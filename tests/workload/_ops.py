"""Helpers for the workload tests: the rows of an ops table that tests look at."""

from __future__ import annotations

import polars as pl

__all__ = ["comm"]


def comm(ops: pl.DataFrame, rank: int, group: str, collective: str | None = None) -> pl.DataFrame:
    """The collectives of ``rank`` over ``group`` (only ``collective`` if given)."""
    q = ops.filter((pl.col("rank") == rank) & (pl.col("group") == group))
    if collective:
        q = q.filter(pl.col("collective") == collective)
    return q
