"""The iteration breakdown partitions each rank's time exactly."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wormsim.analysis.breakdown import iteration_breakdown, op_intervals, rank_breakdown
from wormsim.workload.builder import build_ops
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec
from wormsim.workload.ops import OPS_SCHEMA


def _op(op_id, rank, kind, group="", deps=(), collective=""):
    return dict(
        op_id=op_id,
        rank=rank,
        seq=op_id,
        kind=kind,
        name="x",
        phase="fwd",
        stage=0,
        chunk=0,
        layer=0,
        microbatch=0,
        duration_ps=0,
        flops=0.0,
        collective=collective,
        group=group,
        coll_id=op_id if kind == "comm" else -1,
        peer=-1,
        size_bytes=1,
        split_bytes=None,
        deps=list(deps),
    )


def test_hand_made_rank():
    # compute [0, 10); TP all-reduce [10, 15) exposed; compute [15, 25) with a DP bucket
    # [15, 30) overlapping it: 5 exposed; idle [30, 40)
    ops = pl.DataFrame(
        [
            _op(0, 0, "compute"),
            _op(1, 0, "comm", "tp", deps=[0], collective="allreduce"),
            _op(2, 0, "compute", deps=[1]),
            _op(3, 0, "comm", "dp", deps=[1], collective="allreduce"),
            _op(4, 0, "compute", deps=[2, 3]),
        ],
        schema=OPS_SCHEMA,
    )
    start = np.array([0, 15, 15, 30, 40, 40], dtype=np.int64)
    finish = np.array([10, 15, 25, 30, 40, 40], dtype=np.int64)
    iv = op_intervals(ops, start, finish)
    got = rank_breakdown(iv, 40)
    assert got == {"compute_ps": 20, "exposed_tp_ps": 5, "exposed_dp_ps": 5, "idle_ps": 10}


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
    total = table["critical_rank_s"].sum()
    assert total == pytest.approx(tl.iteration_ps / 1e12, rel=1e-9)
    assert table["critical_share"].sum() == pytest.approx(1.0)
