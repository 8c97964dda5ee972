"""The iteration breakdown partitions each rank's time exactly."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.collective._ops import OpsBuilder
from wormsim.analysis.breakdown import iteration_breakdown, op_intervals, rank_breakdown
from wormsim.workload.builder import build_ops
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec


def test_hand_made_rank():
    # compute [0, 10); TP all-reduce [10, 15) exposed; compute [15, 25) with a DP bucket
    # [15, 30) overlapping it: 5 exposed; idle [30, 40)
    b = OpsBuilder()
    c0 = b.compute(0)
    tp = b.coll("allreduce", [0], 1, group="tp", deps={0: [c0]})[0]
    c2 = b.compute(0, deps=[tp])
    dp = b.coll("allreduce", [0], 1, group="dp", deps={0: [tp]})[0]
    b.compute(0, deps=[c2, dp])
    ops = b.frame()
    start = np.array([0, 15, 15, 30, 40, 40], dtype=np.int64)
    finish = np.array([10, 15, 25, 30, 40, 40], dtype=np.int64)
    iv = op_intervals(ops, start, finish)
    got = rank_breakdown(iv, 40)
    assert got == {
        "compute_ps": 20,
        "exposed_tp_ps": 5,
        "exposed_dp_ps": 5,
        "bubble_ps": 0,
        "idle_ps": 10,
        "overlap_ps": 10,  # the DP bucket under the second compute
    }


def test_categories_sum_to_the_iteration():
    model = ModelSpec(num_layers=4, hidden_size=256, num_heads=8, vocab_size=64, seq_length=128)
    from wormsim.workload.parallel import ParallelSpec
    from wormsim.workload.timeline import compute_timeline

    ops = build_ops(model, ParallelSpec(tp=2, pp=2, global_batch=4), HardwareSpec(), 8)
    tl = compute_timeline(ops)
    finish = tl.finish_ps
    dur = ops["duration_ps"].to_numpy()
    start = finish - dur
    table = iteration_breakdown(ops, start, finish)
    parts = table.filter(pl.col("category") != "overlap")
    assert parts["critical_rank_us"].sum() == pytest.approx(tl.iteration_ps / 1e6, rel=1e-9)
    assert parts["critical_rank_pct"].sum() == pytest.approx(100.0)
