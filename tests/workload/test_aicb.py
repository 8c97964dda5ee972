"""SimAI/AICB workload files: parse the real AICB file, import it, export, round-trip."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from wormsim.workload.aicb import (
    AicbExportWarning,
    AicbFormatError,
    aicb_to_ops,
    ops_to_aicb,
    ops_to_workload,
    parse_aicb,
    read_aicb,
    write_aicb,
)
from wormsim.workload.builder import build_ops
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec
from wormsim.workload.ops import OPS_SCHEMA
from wormsim.workload.parallel import ParallelSpec, RankLayout
from wormsim.workload.schedule import stage_schedule
from wormsim.workload.timeline import compute_timeline

DATA = Path(__file__).resolve().parents[1] / "data" / "aicb"
REAL = DATA / "gpt13b-128.txt"
# GPT-13B of the file: b = 1, s = 2048, h = 5120, bf16; M = 2·b·s·h bytes
B, S, H, V = 1, 2048, 5120, 50257
M = 2 * B * S * H


@pytest.fixture(scope="module")
def real():
    return read_aicb(REAL)


@pytest.fixture(scope="module")
def real_ops(real):
    return aicb_to_ops(real)


# --------------------------------------------------------------------------------------------
# Parsing


def test_header_of_real_file(real):
    assert real.policy == "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
    assert (real.tp, real.ep, real.pp, real.vpp, real.ga, real.all_gpus) == (8, 1, 4, 10, 4, 128)
    assert real.pp_comm == 20971520 == M
    assert real.dp == 4
    assert real.checkpoints == () and real.checkpoint_initiates == ()
    assert len(real.rows) == 99


def test_rows_sizes_and_groups(real):
    attn = [r for r in real.rows if r.name == "attention_layer"]
    assert len(attn) == 40  # 10 layers per stage x ga 4
    for r in attn:
        assert r.comm("fwd") == ("allreduce", "tp", M)
        assert r.comm("ig") == ("allreduce", "tp", M)
        assert r.comm("wg") is None
    by = {r.name: r for r in real.rows}
    assert by["grad_norm"].comm("fwd") == ("allgather", "tp", 1069547520)
    assert by["grad_norm"].comm("wg") == ("reducescatter", "dp", 2 * 1069547520)
    assert by["moe_grad_norm1"].comm("wg") == ("allgather", "edp", 0)
    assert by["moe_grad_norm2"].comm("wg") == ("reducescatter", "edp", 0)
    assert by["embedding_norm"].comm("fwd") == ("allreduce", "tp", 2 * V * H)
    assert by["cross_entropy1"].comm("fwd") == ("allreduce", "tp", 4 * B * S)
    row = parse_aicb(
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 pp: 1 ga: 1 all_gpus: 8\n"
        "1\nmoe\t-1\t5\tALLTOALL_EP\t64\t5\tALLREDUCEALLTOALL\t32\t5\tALLGATHER_DP_EP\t16\t100\n"
    ).rows[0]
    assert row.comm("fwd") == ("alltoall", "ep", 64)
    assert row.comm("ig") == ("allreduce", "tp", 32)
    assert row.comm("wg") == ("allgather", "edp", 16)


def test_sections_of_real_file(real):
    head, blocks, tail = real.sections()
    assert [r.name for r in head] == ["grad_norm", "layernorm", "moe_grad_norm1", "moe_grad_norm2"]
    assert len(blocks) == 4
    for b in blocks:
        names = [r.name for r in b]
        assert names[0] == "embedding_layer" and names[-1] == "embedding_norm"
        assert names[1:-1] == ["attention_layer", "mlp_layer"] * 10
    assert [r.name for r in tail][:3] == ["cross_entropy1", "cross_entropy2", "cross_entropy3"]
    assert len(tail) == 7


def test_text_round_trip_is_exact(real):
    assert real.to_text() == REAL.read_text()


# --------------------------------------------------------------------------------------------
# Import


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


# --------------------------------------------------------------------------------------------
# Export and round trip

SMALL = ModelSpec(
    name="small", num_layers=8, hidden_size=512, num_heads=8, vocab_size=64, seq_length=256
)
SMALL_MOE = ModelSpec(
    name="small-moe",
    num_layers=4,
    hidden_size=256,
    num_heads=8,
    vocab_size=64,
    seq_length=128,
    num_experts=8,
    moe_top_k=2,
)


def _per_group(ops: pl.DataFrame, rank: int = 0) -> dict[tuple[str, str], tuple[int, int]]:
    q = (
        ops.filter((pl.col("rank") == rank) & (pl.col("kind") == "comm"))
        .with_columns(pl.col("group").replace("etp", "tp"))
        .group_by("group", "collective")
        .agg(n=pl.len(), b=pl.col("size_bytes").sum())
    )
    return {(g, c): (n, b) for g, c, n, b in q.iter_rows()}


@pytest.mark.parametrize(
    "model,par,gpus",
    [
        (SMALL, ParallelSpec(tp=2, pp=2, global_batch=8), 8),
        (SMALL, ParallelSpec(tp=2, pp=2, global_batch=8, sequence_parallel=True, zero_stage=1), 8),
        (SMALL_MOE, ParallelSpec(tp=2, ep=2, global_batch=4, sequence_parallel=True), 8),
    ],
    ids=["dense", "sp-zero1", "moe-ep"],
)
def test_export_import_round_trip(model, par, gpus):
    ops = build_ops(model, par, HardwareSpec(), gpus)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = ops_to_aicb(ops)
    w = parse_aicb(text)
    assert (w.tp, w.pp, w.ep, w.all_gpus) == (par.tp, par.pp, par.ep, gpus)
    assert w.ga == ops.filter(pl.col("rank") == 0)["microbatch"].max() + 1
    if par.pp > 1:
        assert w.pp_comm == ops.filter(pl.col("name") == "pp_send_fwd")["size_bytes"][0]
    back = aicb_to_ops(w)
    before, after = _per_group(ops), _per_group(back)
    # the tied-embedding all-reduce between first and last stage has no AICB group
    dropped = before.pop(("pp", "allreduce"), None)
    assert (dropped is not None) == any(issubclass(c.category, AicbExportWarning) for c in caught)
    assert after == before
    c0 = ops.filter((pl.col("rank") == 0) & (pl.col("kind") == "compute"))["duration_ps"].sum()
    c1 = back.filter((pl.col("rank") == 0) & (pl.col("kind") == "compute"))["duration_ps"].sum()
    assert abs(c0 - c1) <= 1000 * ops.height  # ns rounding only
    assert back.filter((pl.col("rank") == 0) & (pl.col("layer") >= 0))["layer"].n_unique() == (
        model.num_layers // par.pp
    )
    compute_timeline(back)


def test_export_layout_from_config_matches_inferred(tmp_path):
    ops = build_ops(SMALL, ParallelSpec(tp=2, pp=2, global_batch=8), HardwareSpec(), 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AicbExportWarning)
        inferred = ops_to_aicb(ops)
        explicit = ops_to_aicb(ops, RankLayout(tp=2, cp=1, dp=2, pp=2))
        path = write_aicb(tmp_path / "w.txt", ops)
        assert ops_to_workload(ops, rank=7).pp == 2
    assert inferred == explicit == path.read_text()
    assert inferred.splitlines()[0] == (
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 2 vpp: 4 ga: 4 "
        "all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 262144"
    )
    assert read_aicb(path).rows == parse_aicb(inferred).rows


# --------------------------------------------------------------------------------------------
# Malformed input

GOOD_HEADER = (
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 ep: 1 pp: 1 vpp: 1 ga: 1 "
    "all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0"
)
ROW = "attention_layer\t-1\t1\tALLREDUCE\t64\t1\tALLREDUCE\t64\t1\tNONE\t0\t100"


BAD_SIZE = ROW.replace("\t64\t1\tALLREDUCE", "\t6x4\t1\tALLREDUCE")
NEG_SIZE = ROW.replace("ALLREDUCE\t64\t1\tNONE", "ALLREDUCE\t-64\t1\tNONE")
BAD_TYPE = ROW.replace("\tALLREDUCE\t64\t1\tNONE", "\tBROADCAST\t64\t1\tNONE")
SHORT = "mlp_layer -1 1 NONE 0 1 NONE 0 1 NONE 0"


@pytest.mark.parametrize(
    "text,line,words",
    [
        (f"{GOOD_HEADER}\n2\n{ROW}\n{SHORT}\n", 4, "11 fields"),
        (f"{GOOD_HEADER}\n1\n{BAD_SIZE}\n", 3, "fwd_comm_bytes is '6x4', not an integer"),
        (f"{GOOD_HEADER}\n2\n{ROW}\n{NEG_SIZE}\n", 4, "ig_comm_bytes is -64"),
        (f"{GOOD_HEADER}\n1\n{BAD_TYPE}\n", 3, "'BROADCAST', an unknown comm type"),
        (f"{GOOD_HEADER.replace(' ga: 1', '')}\n1\n{ROW}\n", 1, "'ga:' is missing"),
        (f"{GOOD_HEADER}\n3\n{ROW}\n{ROW}\n", 2, "says 3 layer rows but the file has 2"),
        (f"{GOOD_HEADER.replace('all_gpus: 8', 'all_gpus: 10')}\n1\n{ROW}\n", 1, "not divisible"),
        (
            f"{GOOD_HEADER.replace('HYBRID_TRANSFORMER_FWD_IN_BCKWD', 'DLRM')}\n1\n{ROW}\n",
            1,
            "policy 'DLRM'",
        ),
    ],
    ids=[
        "fields",
        "non-integer",
        "negative",
        "comm-type",
        "missing-key",
        "row-count",
        "all-gpus",
        "policy",
    ],
)
def test_malformed_inputs(tmp_path, text, line, words):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(AicbFormatError) as exc:
        read_aicb(path)
    assert isinstance(exc.value, ValueError)
    msg = str(exc.value)
    assert f"{path}:{line}:" in msg and words in msg
