"""The stage builder: TP, CP and pipeline ops of one stage, and its template."""

from __future__ import annotations

import polars as pl
import pytest

from tests.workload._ops import comm
from wormsim.workload.builder import build_ops
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.plan import plan_workload
from wormsim.workload.schedule import warmup_count
from wormsim.workload.stage_builder import StageBuilder
from wormsim.workload.timeline import compute_timeline


@pytest.mark.parametrize("sp", [False, True])
def test_tp_collectives_per_layer_and_microbatch(small_model, hw, sp):
    m_ = 3
    ops = build_ops(small_model, ParallelSpec(tp=4, global_batch=m_, sequence_parallel=sp), hw, 4)
    tp = comm(ops, 0, "tp").filter(pl.col("layer") >= 0)
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
        q = comm(ops, 0, "tp").filter((pl.col("layer") >= 0) & (pl.col("phase") == "fwd"))
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
        sends = comm(ops, rank, "pp", "send")
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


def test_cp_ring_attention(small_model, hw):
    c = 4
    ops = build_ops(small_model, ParallelSpec(tp=1, cp=c, global_batch=1), hw, c)
    sends = comm(ops, 0, "cp", "send")
    kv = 2 * (small_model.seq_length // c) * small_model.kv_heads * small_model.head_dim * 2
    fwd = sends.filter(pl.col("phase") == "fwd")
    bwd = sends.filter(pl.col("phase") == "bwd")
    assert fwd.height == (c - 1) * small_model.num_layers
    assert set(fwd["size_bytes"].to_list()) == {kv}
    assert set(bwd["size_bytes"].to_list()) == {2 * kv}
    assert set(sends["peer"].to_list()) == {1}
    assert compute_timeline(ops).iteration_ps > 0


@pytest.mark.parametrize("zero", [0, 1, 3])
def test_template_is_one_rank_of_each_stage(small_model, hw, zero):
    par = ParallelSpec(tp=2, pp=2, global_batch=8, sequence_parallel=True, zero_stage=zero)
    plan = plan_workload(small_model, par, hw, 8)
    ops = build_ops(small_model, par, hw, 8)
    for stage in range(2):
        tmpl = StageBuilder(plan, stage).build()
        assert all(d < i for i, op in enumerate(tmpl.ops) for d in op.deps)
        rows = ops.filter(pl.col("stage") == stage)
        assert rows.height == len(tmpl.ops) * plan.layout.stage_size
        rank = rows.filter(pl.col("rank") == rows["rank"].min()).sort("seq")
        assert rank["name"].to_list() == [op.name for op in tmpl.ops]
        assert rank["size_bytes"].to_list() == [op.size_bytes for op in tmpl.ops]
