"""`workload show --json`: the show tables as JSON, consistent with ops.parquet."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from tests.pipelines.conftest import TINY
from wormsim.cli import app

EXPERIMENT = {
    **TINY,
    "name": "show",
    "parallel": {"tp": 2, "pp": 2, "global_batch": 8},
    "cluster": {"gpus": 8, "gpus_per_node": 4},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("show")
    (tmp / "exp.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    r = CliRunner().invoke(app, ["workload", "build", str(tmp / "exp.yaml"), "-o", str(tmp / "r")])
    assert r.exit_code == 0, r.output
    return tmp / "r"


def test_show_json_matches_the_ops_table(run: Path):
    r = CliRunner().invoke(app, ["workload", "show", str(run), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    ops = pl.read_parquet(run / "ops.parquet")
    comm = ops.filter(pl.col("kind") == "comm")
    traffic, summary = got["traffic"], got["summary"]
    # every comm byte of every rank is in exactly one (group, collective) row
    assert sum(row["total_bytes"] for row in traffic) == comm["size_bytes"].sum()
    # op counts: per-rank mean x ranks = the comm ops of that row, summed = all comm ops
    assert sum(row["per_rank_ops_count"] * row["ranks_count"] for row in traffic) == pytest.approx(
        summary["comm_ops_count"]
    )
    assert (
        summary["comm_ops_count"] + summary["compute_ops_count"]
        == summary["ops_count"]
        == ops.height
    )
    assert summary["ranks_count"] == EXPERIMENT["cluster"]["gpus"]
    # dp = 8 / (tp·pp) = 2: every dp and tp row spans all ranks, pp sends run between stages
    assert {row["group"] for row in traffic} >= {"tp", "pp", "dp"}
    assert 0 <= summary["bubble_fraction_pct"] < 100
    assert summary["compute_per_rank_mean_s"] <= summary["compute_per_rank_max_s"]


def test_show_table_is_human_units(run: Path):
    r = CliRunner().invoke(app, ["workload", "show", str(run)])
    assert r.exit_code == 0, r.output
    assert "Communication per parallel dimension" in r.output
    assert "iteration_without_network_s" not in r.output  # suffix dropped: the cell has it
    assert "MiB" in r.output and " %" in r.output


def test_show_json_without_ops_is_a_clear_error(tmp_path: Path):
    r = CliRunner().invoke(app, ["workload", "show", str(tmp_path), "--json"])
    assert r.exit_code == 2 and "ops.parquet" in r.output
    assert isinstance(r.exception, SystemExit)
