"""The iteration breakdown partitions each rank's time exactly."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.collective._ops import OpsBuilder
from wormsim.analysis.breakdown import (
    critical_path,
    iteration_breakdown,
    op_intervals,
    rank_breakdown,
    union_intervals,
)
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


def _union_reference(starts: list[int], ends: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted((a, b) for a, b in zip(starts, ends, strict=True) if b > a):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def test_union_of_intervals_is_sorted_disjoint_and_covers_them():
    rng = np.random.default_rng(7)
    for n in (0, 1, 5, 200):
        starts = rng.integers(0, 50, n).astype(np.int64)  # many ties
        ends = starts + rng.integers(-3, 10, n)  # some empty or reversed
        s, e = union_intervals(starts, ends)
        assert list(zip(s.tolist(), e.tolist(), strict=True)) == _union_reference(
            starts.tolist(), ends.tolist()
        )


def test_critical_path_starts_from_the_first_node_that_finishes_last():
    # nodes 1 and 2 both finish last (at 9): the path ends at node 1, after node 0
    dag = pl.DataFrame(
        {
            "node_id": [0, 1, 2],
            "kind": ["compute", "compute", "compute"],
            "rank": [0, 0, 1],
            "src": [-1, -1, -1],
            "group": ["", "", ""],
            "op_id": [0, 1, 2],
            "deps": [[], [0], []],
        },
        schema_overrides={"deps": pl.List(pl.Int64)},
    )
    nodes = pl.DataFrame({"start_ps": [0, 4, 0], "finish_ps": [4, 9, 9]})
    path = critical_path(dag, nodes)
    assert path["node_id"].to_list() == [0, 1]
    assert path["owned_ps"].to_list() == [4, 5]
