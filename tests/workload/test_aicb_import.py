"""AICB import: the ops table of the real AICB file and of hand-written ones."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.workload._aicb import H, M, V
from wormsim.workload.aicb import aicb_experiment_document, aicb_to_ops, parse_aicb
from wormsim.workload.ops import OPS_SCHEMA
from wormsim.workload.schedule import stage_schedule
from wormsim.workload.timeline import compute_timeline


def test_import_schema_and_ranks(real_ops):
    assert dict(real_ops.schema) == OPS_SCHEMA
    assert real_ops["rank"].n_unique() == 128
    assert np.array_equal(real_ops["op_id"].to_numpy(), np.arange(real_ops.height))


@pytest.mark.parametrize("rank", [0, 45, 127])
def test_tp_collectives_per_layer_and_microbatch(real_ops, rank):
    stage = rank // 32
    tp = real_ops.filter(
        (pl.col("rank") == rank) & (pl.col("group") == "tp") & (pl.col("layer") >= 0)
    )
    per = tp.group_by("microbatch", "layer", "phase").agg(
        n=pl.len(), kinds=pl.col("collective").unique(), size=pl.col("size_bytes").max()
    )
    assert sorted(per["microbatch"].unique().to_list()) == [0, 1, 2, 3]
    assert sorted(per["layer"].unique().to_list()) == list(range(10 * stage, 10 * stage + 10))
    assert per.height == 4 * 10 * 2
    assert (per["n"] == 2).all()  # attention + mlp, forward and backward (SP off)
    assert per["kinds"].to_list() == [["allreduce"]] * per.height
    assert (per["size"] == M).all()
    # the embedding rows' all-reduces and embedding_norm's 2·V·h, once per micro-batch
    emb = real_ops.filter((pl.col("rank") == rank) & (pl.col("name") == "tp_embedding_norm_fwd"))
    assert emb.height == 4 and (emb["size_bytes"] == 2 * V * H).all()


def test_dp_bytes_equal_file_wg_bytes(real, real_ops):
    wg = sum(r.wg_comm_bytes for r in real.sections()[0] if r.comm("wg") is not None)
    dp = real_ops.filter(pl.col("group") == "dp").group_by("rank").agg(pl.col("size_bytes").sum())
    assert dp.height == 128
    assert (dp["size_bytes"] == wg).all() and wg == 2139095040
    # 0-byte collectives (moe_grad_norm) and size-1 groups are dropped
    assert real_ops.filter(pl.col("group").is_in(["ep", "edp"])).height == 0
    assert real_ops.filter((pl.col("kind") == "comm") & (pl.col("size_bytes") == 0)).height == 0


def test_every_collective_is_a_proper_group(real_ops):
    comm = real_ops.filter(pl.col("kind") == "comm")
    groups = comm.group_by("coll_id").agg(
        pl.col("group").first(), pl.col("rank").sort(), pl.col("collective"), pl.col("peer")
    )
    seen = set()
    for g, ranks, colls, peers in groups.select("group", "rank", "collective", "peer").iter_rows():
        seen.add(g)
        r0 = ranks[0]
        if g == "tp":
            assert r0 % 8 == 0 and ranks == list(range(r0, r0 + 8))
        elif g == "dp":
            base = (r0 // 32) * 32 + r0 % 8
            assert ranks == [base + 8 * j for j in range(4)]
        elif g == "pp":
            assert sorted(colls) == ["recv", "send"]
            assert ranks[1] - ranks[0] == 32 and sorted(peers) == ranks
        else:
            raise AssertionError(g)
    assert seen == {"tp", "dp", "pp"}


def test_pipeline_is_1f1b_and_timeline_runs(real_ops):
    for rank in (0, 96):
        stage = rank // 32
        p2p = real_ops.filter(
            (pl.col("rank") == rank) & pl.col("collective").is_in(["send", "recv"])
        ).sort("seq")
        order = [(n.split("_")[-1], mb) for n, mb in p2p.select("name", "microbatch").iter_rows()]
        expect = [(p.direction, p.microbatch) for p in stage_schedule(stage, 4, 4)]
        assert order == expect  # stage 0 and 3 have one transfer per pass
        assert (p2p["size_bytes"] == M).all()
    tl = compute_timeline(real_ops)
    assert tl.iteration_ps > 0


def test_block_wg_reduced_at_last_microbatch(tmp_path):
    text = (
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 2 vpp: 1 ga: 3 "
        "all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 4096\n"
        "4\n"
        "grad_norm\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE\t800\t100\n"
        + "attention_layer\t-1\t10\tALLREDUCE\t64\t20\tALLREDUCE\t64\t30\tALLREDUCE\t1000\t100\n"
        * 3
    )
    ops = aicb_to_ops(parse_aicb(text))
    dp = ops.filter((pl.col("rank") == 0) & (pl.col("group") == "dp"))
    assert sorted(dp["size_bytes"].to_list()) == [800, 1000]
    assert dp.filter(pl.col("size_bytes") == 1000)["microbatch"].to_list() == [2]
    # wg collectives are off the main chain: no other op waits for them
    rank0 = ops.filter((pl.col("rank") == 0) & (pl.col("group") != "dp"))
    assert not set(dp["op_id"].to_list()) & set(rank0["deps"].explode().drop_nulls().to_list())
    assert ops.filter((pl.col("rank") == 0) & (pl.col("kind") == "compute"))[
        "duration_ps"
    ].sum() == 1000 * (3 + 3 * 60)
    compute_timeline(ops)


def test_experiment_document_takes_model_and_layout_from_the_file(real):
    """The workload package builds the experiment as a plain mapping; validating it is the
    experiment layer's job (``wormsim.experiment.import_experiment``)."""
    w = real
    data = {"cluster": {"gpus_per_node": 8}, "parallel": {"tp": 99}, "network": {"cc": "dcqcn"}}
    doc = aicb_experiment_document(w, data, "gpt13b-128.txt")
    assert data == {
        "cluster": {"gpus_per_node": 8},
        "parallel": {"tp": 99},
        "network": {"cc": "dcqcn"},
    }  # not modified
    assert doc["cluster"] == {"gpus_per_node": 8, "gpus": w.all_gpus}
    assert (doc["parallel"]["tp"], doc["parallel"]["pp"]) == (w.tp, w.pp)
    assert doc["model"]["name"] == "aicb:gpt13b-128.txt" and doc["network"] == {"cc": "dcqcn"}
    with pytest.raises(ValueError, match=f"all_gpus {w.all_gpus} but"):
        aicb_experiment_document(w, {"cluster": {"gpus": 3}}, "w.txt")
