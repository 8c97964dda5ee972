"""Helpers for the workload tests: small models, and the rows of an ops table tests look at."""

from __future__ import annotations

import polars as pl

from wormsim.workload.model import ModelSpec

__all__ = ["comm", "SMALL_MOE"]

SMALL_MOE = ModelSpec(
    name="small-moe",
    num_layers=4,
    hidden_size=256,
    num_heads=8,
    vocab_size=64,
    seq_length=128,
    num_experts=8,
    moe_top_k=2,
)
"""A MoE model: 4 layers, 8 experts, top-2."""


def comm(ops: pl.DataFrame, rank: int, group: str, collective: str | None = None) -> pl.DataFrame:
    """The collectives of ``rank`` over ``group`` (only ``collective`` if given)."""
    q = ops.filter((pl.col("rank") == rank) & (pl.col("group") == group))
    if collective:
        q = q.filter(pl.col("collective") == collective)
    return q
