"""MoE routing: all-to-all volumes and members, uneven splits, capacity, the split matrix."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.workload._ops import comm
from wormsim.workload.builder import build_ops
from wormsim.workload.moe_routing import a2a_matrix, dispatch_bytes
from wormsim.workload.parallel import ParallelSpec
from wormsim.workload.plan import plan_workload


@pytest.mark.parametrize("tp,etp,ep,sp", [(1, 1, 4, False), (2, 2, 2, True), (2, 1, 4, True)])
def test_moe_all_to_all_volume(small_moe, hw, tp, etp, ep, sp):
    m_ = 2
    gpus = 8
    par = ParallelSpec(tp=tp, ep=ep, etp=etp, sequence_parallel=sp, global_batch=m_ * gpus // tp)
    ops = build_ops(small_moe, par, hw, gpus)
    a2a = comm(ops, 0, "ep", "alltoall")
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


def test_dispatch_bytes_split_over_cp_and_sp(small_moe, hw):
    m = small_moe
    full = m.seq_length * m.moe_top_k * m.hidden_size * 2
    plan = plan_workload(small_moe, ParallelSpec(ep=4, global_batch=8), hw, 8)
    assert dispatch_bytes(plan, sp=False) == full
    par = ParallelSpec(tp=2, ep=2, cp=2, sequence_parallel=True, global_batch=2)
    plan = plan_workload(small_moe, par, hw, 8)
    assert dispatch_bytes(plan, sp=True) == full // 4
    assert dispatch_bytes(plan, sp=False) == full // 2


def _plan(moe, hw, **kw):
    return plan_workload(moe, ParallelSpec(ep=4, global_batch=8, **kw), hw, 8)


def test_a2a_matrix_routes_every_token_copy(small_moe, hw):
    plan = _plan(small_moe, hw, moe_routing_skew=1.5, seed=5)
    disp = dispatch_bytes(plan, sp=False)
    mat = a2a_matrix(plan, 7, 3, disp)
    assert mat.shape == (3, 4, 4) and mat.dtype == np.int64
    assert (mat.sum(axis=2) == disp).all()  # dropless: each rank sends all its copies
    assert mat.max() > mat.min()
    assert np.array_equal(mat, a2a_matrix(plan, 7, 3, disp))  # seeded by (seed, key)
    assert not np.array_equal(mat, a2a_matrix(plan, 8, 3, disp))


def test_a2a_matrix_uniform_and_capped(small_moe, hw):
    plan = _plan(small_moe, hw, moe_capacity_factor=1.0)
    disp = dispatch_bytes(plan, sp=False)
    even = a2a_matrix(plan, 0, 2, disp)
    assert (even == disp // 4).all()  # no skew: an even split over the ep ranks
    capped = _plan(small_moe, hw, moe_routing_skew=2.0, moe_capacity_factor=1.0)
    mat = a2a_matrix(capped, 0, 4, disp)
    assert (mat.sum(axis=2) <= disp).all() and (mat.sum(axis=2) < disp).any()
