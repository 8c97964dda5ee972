"""AICB export: ops tables written as AICB workloads, and the round trip through the importer."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from tests.workload._ops import SMALL_MOE
from wormsim.workload.aicb import (
    AicbExportWarning,
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
from wormsim.workload.parallel import ParallelSpec, RankLayout
from wormsim.workload.timeline import compute_timeline

SMALL = ModelSpec(
    name="small", num_layers=8, hidden_size=512, num_heads=8, vocab_size=64, seq_length=256
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
