"""The workload plan: layout resolution, cross-field rules and the plan's figures."""

from __future__ import annotations

import pytest

from wormsim.workload.errors import WorkloadError
from wormsim.workload.model import ModelSpec, resolve_model
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.plan import microbatches, plan_workload, resolve_layout


def test_gpt175b_1024_layout_figures(hw):
    """The worked example of §8: M = 48 MiB, m = 192, bubble 15/192 = 7.8 %."""
    model = ModelSpec(**resolve_model("gpt3-175b"))
    par = ParallelSpec(tp=8, pp=16, global_batch=1536)
    plan = plan_workload(model, par, hw, 1024)
    assert plan.layout.dp == 8
    assert plan.microbatches == 192
    assert plan.activation_bytes == 48 * 2**20
    assert (plan.layout.pp - 1) / plan.microbatches == pytest.approx(0.078, abs=1e-3)


@pytest.mark.parametrize(
    "kwargs,gpus,match",
    [
        (dict(tp=3), 3, "must divide model.num_heads"),
        (dict(tp=2, pp=2), 6, "world size mismatch|not divisible"),
        (dict(tp=2, pp=3), 6, "num_layers"),
        (dict(tp=1, ep=2), 2, "MoE model"),
        (dict(tp=2, global_batch=3), 4, "global_batch"),
        (
            dict(tp=1, pp=2, schedule="interleaved", virtual_stages=2, global_batch=3),
            2,
            "multiple of pp",
        ),
    ],
)
def test_cross_field_rules(small_model, hw, kwargs, gpus, match):
    with pytest.raises(WorkloadError, match=match):
        plan_workload(small_model, ParallelSpec(**kwargs), hw, gpus)


def test_moe_with_tp_needs_sp(small_moe, hw):
    with pytest.raises(WorkloadError, match="sequence_parallel"):
        plan_workload(small_moe, ParallelSpec(tp=2, ep=2), hw, 4)


def test_layout_derives_dp_and_the_default_batch(small_model):
    par = ParallelSpec(tp=2, pp=2)
    lay = resolve_layout(small_model, par, 16)
    assert (lay.tp, lay.pp, lay.cp, lay.dp, lay.etp) == (2, 2, 1, 4, 2)
    assert microbatches(par, lay) == 2  # global batch dp·micro_batch·pp: pp micro-batches


def test_chunk_layers_partition_the_model(small_model, hw):
    par = ParallelSpec(pp=2, global_batch=4, schedule="interleaved", virtual_stages=2)
    plan = plan_workload(small_model, par, hw, 2)
    assert plan.layers_per_chunk == 2
    layers = [list(plan.chunk_layers(s, c)) for c in range(2) for s in range(2)]
    assert layers == [[0, 1], [2, 3], [4, 5], [6, 7]]
