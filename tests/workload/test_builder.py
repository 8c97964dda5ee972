"""Stage 1 against the published arithmetic."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wormsim.workload.builder import build_ops, plan_workload
from wormsim.workload.errors import WorkloadError
from wormsim.workload.model import ModelSpec, resolve_model
from wormsim.workload.ops import OPS_SCHEMA
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.schedule import stage_schedule, warmup_count
from wormsim.workload.timeline import compute_timeline


def _comm(ops: pl.DataFrame, rank: int, group: str, collective: str | None = None) -> pl.DataFrame:
    q = ops.filter((pl.col("rank") == rank) & (pl.col("group") == group))
    if collective:
        q = q.filter(pl.col("collective") == collective)
    return q


def test_schema_and_dense_ids(small_model, hw):
    ops = build_ops(small_model, ParallelSpec(tp=2, pp=2, global_batch=8), hw, gpus=8)
    assert dict(ops.schema) == OPS_SCHEMA
    assert np.array_equal(ops["op_id"].to_numpy(), np.arange(ops.height))
    # deps point backwards in the same rank's schedule (a rank's schedule is a sequence)
    d = ops.select("op_id", "rank", pl.col("deps")).explode("deps").drop_nulls()
    dep_rank = ops["rank"].to_numpy()[d["deps"].to_numpy()]
    assert np.array_equal(dep_rank, d["rank"].to_numpy())
    assert (d["deps"] < d["op_id"]).all()


@pytest.mark.parametrize("tp,pp", [(1, 1), (2, 1), (4, 2), (2, 4)])
def test_ddp_gradient_bytes_per_rank(small_model, hw, tp, pp):
    """DP all-reduce bytes per rank = parameters held / (tp·pp) · 4 B, summed over stages."""
    gpus = tp * pp * 2
    ops = build_ops(small_model, ParallelSpec(tp=tp, pp=pp, global_batch=2 * pp), hw, gpus)
    per_stage = []
    for stage in range(pp):
        rank = stage * tp * 2
        dp = _comm(ops, rank, "dp", "allreduce")
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
    ar = _comm(base, 0, "dp", "allreduce")["size_bytes"].sum()
    rs = _comm(z1, 0, "dp", "reducescatter")["size_bytes"].sum()
    ag = _comm(z1, 0, "dp", "allgather")["size_bytes"].sum()
    assert rs == ar  # same gradient volume, 4 B per element
    assert ag == pytest.approx(ar / 2, rel=1e-6)  # bf16 parameters, 2 B per element


def test_zero3_is_one_and_a_half_ddp(small_model, hw):
    """ZeRO-3 moves 3Ψ elements (AG fwd, AG bwd, RS) against DDP's 2Ψ (RS+AG of an AR)."""
    par = dict(tp=1, global_batch=2, grad_reduce_bytes=2, param_bytes=2)
    ddp = build_ops(small_model, ParallelSpec(**par), hw, gpus=2)
    z3 = build_ops(small_model, ParallelSpec(zero_stage=3, **par), hw, gpus=2)
    psi = _comm(ddp, 0, "dp", "allreduce")["size_bytes"].sum() / 2
    ag = _comm(z3, 0, "dp", "allgather")["size_bytes"].sum() / 2
    rs = _comm(z3, 0, "dp", "reducescatter")["size_bytes"].sum() / 2
    # with m = 1 micro-batch: every layer gathered twice and scattered once; embeddings once
    emb = small_model.embedding_params()
    assert ag == pytest.approx(2 * (psi - emb), rel=1e-6)
    assert rs == pytest.approx(psi, rel=1e-6)
    assert (ag + rs) / psi == pytest.approx(3 - 2 * emb / psi, rel=1e-6)


@pytest.mark.parametrize("sp", [False, True])
def test_tp_collectives_per_layer_and_microbatch(small_model, hw, sp):
    m_ = 3
    ops = build_ops(small_model, ParallelSpec(tp=4, global_batch=m_, sequence_parallel=sp), hw, 4)
    tp = _comm(ops, 0, "tp").filter(pl.col("layer") >= 0)
    counts = tp.group_by("phase", "collective").len()
    per = {
        (r["phase"], r["collective"]): r["len"] / (small_model.num_layers * m_)
        for r in counts.iter_rows(named=True)
    }
    if not sp:
        assert per == {("fwd", "allreduce"): 2, ("bwd", "allreduce"): 2}
    else:
        assert per == {
            ("fwd", "allgather"): 2,
            ("fwd", "reducescatter"): 2,
            ("bwd", "allgather"): 4,
            ("bwd", "reducescatter"): 2,
        }
    M = 1 * small_model.seq_length * small_model.hidden_size * 2
    assert set(tp["size_bytes"].unique()) == {M}
    # members of every TP collective: the t consecutive ranks of one server
    members = ops.filter(pl.col("group") == "tp").group_by("coll_id").agg(pl.col("rank").sort())
    assert all(r == [0, 1, 2, 3] for r in members["rank"].to_list())


def test_sp_and_no_sp_move_the_same_tp_bytes(small_model, hw):
    """RS + AG = AR: with SP the forward volume equals SP off (backward adds the re-gathers)."""

    def fwd_bytes(sp: bool) -> int:
        ops = build_ops(small_model, ParallelSpec(tp=4, sequence_parallel=sp), hw, 4)
        q = _comm(ops, 0, "tp").filter((pl.col("layer") >= 0) & (pl.col("phase") == "fwd"))
        # α-β: AR of S moves 2(n-1)/n S per rank, RS and AG (n-1)/n S each
        w = {"allreduce": 2, "allgather": 1, "reducescatter": 1}
        return sum(w[c] * s for c, s in q.select("collective", "size_bytes").iter_rows())

    assert fwd_bytes(False) == fwd_bytes(True)


@pytest.mark.parametrize("pp,m_", [(2, 4), (4, 4), (4, 8)])
def test_pp_sends_per_microbatch(small_model, hw, pp, m_):
    ops = build_ops(small_model, ParallelSpec(tp=2, pp=pp, global_batch=m_), hw, 2 * pp)
    M = small_model.seq_length * small_model.hidden_size * 2
    for stage in range(pp):
        rank = stage * 2
        sends = _comm(ops, rank, "pp", "send")
        fwd = sends.filter(pl.col("phase") == "fwd")
        bwd = sends.filter(pl.col("phase") == "bwd")
        assert fwd.height == (m_ if stage < pp - 1 else 0)
        assert bwd.height == (m_ if stage > 0 else 0)
        assert set(sends["size_bytes"].to_list()) <= {M}
        # peers: same TP index on the adjacent stage
        assert set(fwd["peer"].to_list()) <= {rank + 2}
        assert set(bwd["peer"].to_list()) <= {rank - 2}
    # every send has exactly one matching recv
    p2p = ops.filter(pl.col("group") == "pp", pl.col("collective").is_in(["send", "recv"]))
    pairs = p2p.group_by("coll_id").agg(pl.col("collective").sort())
    assert all(c == ["recv", "send"] for c in pairs["collective"].to_list())


@pytest.mark.parametrize("pp,m_", [(4, 8), (4, 2), (2, 5)])
def test_1f1b_warmup_counts(small_model, hw, pp, m_):
    ops = build_ops(small_model, ParallelSpec(tp=1, pp=pp, global_batch=m_), hw, pp)
    for stage in range(pp):
        names = ops.filter((pl.col("rank") == stage) & (pl.col("kind") == "compute"))["name"]
        names = names.to_list()
        first_bwd = names.index("attn_bwd") if "attn_bwd" in names else len(names)
        mlp_before = names[:first_bwd].count("mlp_fwd")
        layers = small_model.num_layers // pp
        # warm-up forwards plus the first steady-state forward
        expected = min(pp - stage - 1, m_) + (1 if m_ > pp - stage - 1 else 0)
        assert mlp_before == expected * layers
        assert warmup_count(stage, pp, m_) == min(pp - stage - 1, m_)


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


def test_interleaved_has_v_times_the_p2p(small_model, hw):
    a = build_ops(small_model, ParallelSpec(tp=1, pp=2, global_batch=4), hw, 2)
    b = build_ops(
        small_model,
        ParallelSpec(tp=1, pp=2, global_batch=4, schedule="interleaved", virtual_stages=2),
        hw,
        2,
    )
    n = lambda ops: ops.filter(pl.col("collective") == "send").height  # noqa: E731
    # 1F1B: 2(p-1)m transfers; interleaved: 2(pv-1)m
    assert n(a) == 2 * 1 * 4
    assert n(b) == 2 * (2 * 2 - 1) * 4


@pytest.mark.parametrize("tp,etp,ep,sp", [(1, 1, 4, False), (2, 2, 2, True), (2, 1, 4, True)])
def test_moe_all_to_all_volume(small_moe, hw, tp, etp, ep, sp):
    m_ = 2
    gpus = 8
    par = ParallelSpec(tp=tp, ep=ep, etp=etp, sequence_parallel=sp, global_batch=m_ * gpus // tp)
    ops = build_ops(small_moe, par, hw, gpus)
    a2a = _comm(ops, 0, "ep", "alltoall")
    # 4 all-to-alls per MoE layer per micro-batch
    assert a2a.height == 4 * small_moe.num_layers * m_
    T = small_moe.seq_length // tp  # tokens per rank after SP
    assert set(a2a["size_bytes"].to_list()) == {T * small_moe.moe_top_k * small_moe.hidden_size * 2}
    plan = plan_workload(small_moe, par, hw, gpus)
    members = ops.filter(pl.col("group") == "ep").group_by("coll_id").agg(pl.col("rank").sort())
    for ranks in members["rank"].to_list():
        assert ranks == plan.layout.members("ep", ranks[0])
        assert len(ranks) == ep


def test_moe_uneven_splits_are_consistent(small_moe, hw):
    par = ParallelSpec(tp=1, ep=4, global_batch=8, moe_routing_skew=1.0, seed=3)
    ops = build_ops(small_moe, par, hw, 8)
    a2a = ops.filter(pl.col("collective") == "alltoall")
    assert a2a["split_bytes"].null_count() == 0
    sums = a2a["split_bytes"].list.sum()
    assert (sums == a2a["size_bytes"]).all()
    assert a2a["split_bytes"].list.len().unique().to_list() == [4]
    # uneven for real
    assert a2a["split_bytes"].list.max().gt(a2a["split_bytes"].list.min()).any()
    # the combine returns exactly what the dispatch sent: combine[j][i] == dispatch[i][j]
    fwd = a2a.filter(pl.col("phase") == "fwd", pl.col("layer") == 0, pl.col("microbatch") == 0)
    disp = fwd.filter(pl.col("name") == "ep_dispatch").sort("rank")
    comb = fwd.filter(pl.col("name") == "ep_combine").sort("rank")
    for cid in disp["coll_id"].unique():
        d = disp.filter(pl.col("coll_id") == cid)
        ranks = d["rank"].to_list()
        cmat = comb.filter(pl.col("rank").is_in(ranks)).sort("rank")["split_bytes"].to_list()
        dmat = d["split_bytes"].to_list()
        assert np.array_equal(np.array(dmat), np.array(cmat).T)
    # same seed, same routing; another seed, another one
    again = build_ops(small_moe, par, hw, 8)
    assert again.equals(ops)
    other = build_ops(small_moe, par.model_copy(update={"seed": 4}), hw, 8)
    assert not other["split_bytes"].equals(ops["split_bytes"])


def test_capacity_factor_drops_tokens(small_moe, hw):
    par = ParallelSpec(tp=1, ep=4, global_batch=8, moe_routing_skew=2.0, moe_capacity_factor=1.0)
    ops = build_ops(small_moe, par, hw, 8)
    a2a = ops.filter(pl.col("name") == "ep_dispatch")
    full = small_moe.seq_length * small_moe.moe_top_k * small_moe.hidden_size * 2
    assert (a2a["size_bytes"] <= full).all()
    assert (a2a["size_bytes"] < full).any()


def test_cp_ring_attention(small_model, hw):
    c = 4
    ops = build_ops(small_model, ParallelSpec(tp=1, cp=c, global_batch=1), hw, c)
    sends = _comm(ops, 0, "cp", "send")
    kv = 2 * (small_model.seq_length // c) * small_model.kv_heads * small_model.head_dim * 2
    fwd = sends.filter(pl.col("phase") == "fwd")
    bwd = sends.filter(pl.col("phase") == "bwd")
    assert fwd.height == (c - 1) * small_model.num_layers
    assert set(fwd["size_bytes"].to_list()) == {kv}
    assert set(bwd["size_bytes"].to_list()) == {2 * kv}
    assert set(sends["peer"].to_list()) == {1}
    assert compute_timeline(ops).iteration_ps > 0


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
        build_ops(small_model, ParallelSpec(**kwargs), hw, gpus)


def test_moe_with_tp_needs_sp(small_moe, hw):
    with pytest.raises(WorkloadError, match="sequence_parallel"):
        build_ops(small_moe, ParallelSpec(tp=2, ep=2), hw, 4)


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
