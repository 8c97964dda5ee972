"""Stage 1 against the published arithmetic."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wormsim.workload.builder import build_ops
from wormsim.workload.model import ModelSpec, resolve_model
from wormsim.workload.ops import OPS_SCHEMA
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.schedule import stage_schedule
from wormsim.workload.timeline import compute_timeline


def test_schema_and_dense_ids(small_model, hw):
    ops = build_ops(small_model, ParallelSpec(tp=2, pp=2, global_batch=8), hw, gpus=8)
    assert dict(ops.schema) == OPS_SCHEMA
    assert np.array_equal(ops["op_id"].to_numpy(), np.arange(ops.height))
    # deps point backwards in the same rank's schedule (a rank's schedule is a sequence)
    d = ops.select("op_id", "rank", pl.col("deps")).explode("deps").drop_nulls()
    dep_rank = ops["rank"].to_numpy()[d["deps"].to_numpy()]
    assert np.array_equal(dep_rank, d["rank"].to_numpy())
    assert (d["deps"] < d["op_id"]).all()


def test_schedule_is_a_permutation_of_passes():
    for pp, m_, v in [(4, 8, 1), (4, 8, 2), (2, 4, 3), (4, 4, 2)]:
        for stage in range(pp):
            order = stage_schedule(stage, pp, m_, v)
            fwd = [(p.microbatch, p.chunk) for p in order if p.direction == "fwd"]
            bwd = [(p.microbatch, p.chunk) for p in order if p.direction == "bwd"]
            every = {(mb, c) for mb in range(m_) for c in range(v)}
            assert set(fwd) == every and len(fwd) == m_ * v
            assert set(bwd) == every and len(bwd) == m_ * v
            for i, p in enumerate(order):  # a backward only after its forward
                if p.direction == "bwd":
                    assert ("fwd", p.microbatch, p.chunk) in {
                        (q.direction, q.microbatch, q.chunk) for q in order[:i]
                    }


def _uniform_model(layers: int) -> ModelSpec:
    # tiny vocabulary: the output layer costs nothing next to the layers, so stages are equal
    return ModelSpec(
        num_layers=layers, hidden_size=1024, num_heads=16, vocab_size=8, seq_length=1024
    )


@pytest.mark.parametrize("pp,m_", [(4, 8), (2, 6), (4, 16)])
def test_bubble_fraction_1f1b(hw, pp, m_):
    model = _uniform_model(8)
    ops = build_ops(model, ParallelSpec(tp=1, pp=pp, global_batch=m_), hw, pp)
    tl = compute_timeline(ops)
    assert tl.bubble_fraction == pytest.approx((pp - 1) / m_, rel=0.02)


@pytest.mark.parametrize("pp,m_,v", [(4, 8, 2), (2, 4, 2), (4, 4, 2)])
def test_bubble_fraction_interleaved(hw, pp, m_, v):
    model = _uniform_model(16)
    par = ParallelSpec(tp=1, pp=pp, global_batch=m_, schedule="interleaved", virtual_stages=v)
    tl = compute_timeline(build_ops(model, par, hw, pp))
    assert tl.bubble_fraction == pytest.approx((pp - 1) / (v * m_), rel=0.03)


def test_measured_kernel_times_override_flops(small_model):
    from wormsim.workload.hardware import HardwareSpec

    hw = HardwareSpec(kernel_times_us={"attn_fwd": 123.0})
    ops = build_ops(small_model, ParallelSpec(), hw, 1)
    att = ops.filter(pl.col("name") == "attn_fwd")["duration_ps"].unique().to_list()
    assert att == [123_000_000]
    mlp = ops.filter(pl.col("name") == "mlp_fwd")
    assert mlp["duration_ps"][0] == hw.flops_to_ps(mlp["flops"][0])


def test_compute_flops_match_6n_rule(hw):
    """Forward + backward FLOPs per token ≈ 6N + 12·L·h·s (the attention term)."""
    model = ModelSpec(**resolve_model("gpt3-13b"))
    ops = build_ops(model, ParallelSpec(tp=1, global_batch=1), hw, 1)
    total = ops.filter(pl.col("kind") == "compute")["flops"].sum()
    tokens = model.seq_length
    n_params = model.total_params()
    expected = 6 * n_params * tokens + 12 * model.num_layers * model.hidden_size * tokens**2
    assert total == pytest.approx(expected, rel=0.05)
