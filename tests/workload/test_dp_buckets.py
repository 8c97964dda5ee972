"""Data-parallel gradient traffic: bucket volumes per ZeRO stage, and the bucket helpers."""

from __future__ import annotations

import pytest

from tests.workload._ops import comm
from wormsim.workload.builder import build_ops
from wormsim.workload.dp_buckets import bucket_limit, dp_group, layer_param_count
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.plan import plan_workload


@pytest.mark.parametrize("tp,pp", [(1, 1), (2, 1), (4, 2), (2, 4)])
def test_ddp_gradient_bytes_per_rank(small_model, hw, tp, pp):
    """DP all-reduce bytes per rank = parameters held / (tp·pp) · 4 B, summed over stages."""
    gpus = tp * pp * 2
    ops = build_ops(small_model, ParallelSpec(tp=tp, pp=pp, global_batch=2 * pp), hw, gpus)
    per_stage = []
    for stage in range(pp):
        rank = stage * tp * 2
        dp = comm(ops, rank, "dp", "allreduce")
        per_stage.append(dp["size_bytes"].sum())
    m = small_model
    # untied copy of the output layer on the last stage when pp > 1
    held = m.total_params() + (m.vocab_size * m.hidden_size if pp > 1 else 0)
    assert sum(per_stage) == pytest.approx(held / tp * 4, rel=1e-3)
    if pp > 1:  # balanced layers: every stage holds about 1/pp of the layer parameters
        layer_bytes = m.num_layers * (m.attention_params() + m.dense_mlp_params()) * 4 / tp
        assert min(per_stage) >= layer_bytes / pp * 0.99


def test_zero1_reduce_scatter_and_gather(small_model, hw):
    base = build_ops(small_model, ParallelSpec(tp=2, global_batch=2), hw, gpus=4)
    z1 = build_ops(small_model, ParallelSpec(tp=2, global_batch=2, zero_stage=1), hw, gpus=4)
    ar = comm(base, 0, "dp", "allreduce")["size_bytes"].sum()
    rs = comm(z1, 0, "dp", "reducescatter")["size_bytes"].sum()
    ag = comm(z1, 0, "dp", "allgather")["size_bytes"].sum()
    assert rs == ar  # same gradient volume, 4 B per element
    assert ag == pytest.approx(ar / 2, rel=1e-6)  # bf16 parameters, 2 B per element


def test_zero3_is_one_and_a_half_ddp(small_model, hw):
    """ZeRO-3 moves 3Ψ elements (AG fwd, AG bwd, RS) against DDP's 2Ψ (RS+AG of an AR)."""
    par = dict(tp=1, global_batch=2, grad_reduce_bytes=2, param_bytes=2)
    ddp = build_ops(small_model, ParallelSpec(**par), hw, gpus=2)
    z3 = build_ops(small_model, ParallelSpec(zero_stage=3, **par), hw, gpus=2)
    psi = comm(ddp, 0, "dp", "allreduce")["size_bytes"].sum() / 2
    ag = comm(z3, 0, "dp", "allgather")["size_bytes"].sum() / 2
    rs = comm(z3, 0, "dp", "reducescatter")["size_bytes"].sum() / 2
    # with m = 1 micro-batch: every layer gathered twice and scattered once; embeddings once
    emb = small_model.embedding_params()
    assert ag == pytest.approx(2 * (psi - emb), rel=1e-6)
    assert rs == pytest.approx(psi, rel=1e-6)
    assert (ag + rs) / psi == pytest.approx(3 - 2 * emb / psi, rel=1e-6)


@pytest.mark.parametrize("tp", [1, 2])
def test_layer_param_count_covers_the_layers(small_model, small_moe, hw, tp):
    plan = plan_workload(small_model, ParallelSpec(tp=tp), hw, tp)
    m = small_model
    per_layer = m.attention_params() + m.layernorm_params() + m.dense_mlp_params()
    assert layer_param_count(plan, 0) == (per_layer // tp, 0)
    moe = plan_workload(small_moe, ParallelSpec(ep=4, global_batch=8), hw, 8)
    dense, expert = layer_param_count(moe, 0)
    assert expert == (small_moe.num_experts // 4) * small_moe.expert_params()
    assert dense > small_moe.attention_params()  # attention, layernorms and the router


def test_bucket_limit_and_group(small_model, hw):
    plan = plan_workload(small_model, ParallelSpec(cp=2, global_batch=4), hw, 8)
    assert bucket_limit(plan) == 40_000_000  # Megatron's max(40M, 1M·dp·cp) with dp·cp = 8
    assert dp_group(plan) == "dp_cp"
    big = plan_workload(small_model, ParallelSpec(global_batch=64), hw, 64)
    assert bucket_limit(big) == 64_000_000 and dp_group(big) == "dp"
    own = plan_workload(small_model, ParallelSpec(bucket_params=123), hw, 2)
    assert bucket_limit(own) == 123
