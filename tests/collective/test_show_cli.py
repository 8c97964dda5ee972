"""`collective show --json`: the DAG summary as JSON, consistent with dag.parquet."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from tests.pipelines.conftest import TINY
from wormsim.cli import app

GPUS_PER_NODE = 4
EXPERIMENT = {
    **TINY,
    "name": "show",
    # tp inside a server, dp across the two servers
    "parallel": {"tp": 4, "pp": 1, "global_batch": 2},
    "cluster": {"gpus": 8, "gpus_per_node": GPUS_PER_NODE},
}


def _ok(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("show")
    (tmp / "exp.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    _ok("workload", "build", str(tmp / "exp.yaml"), "-o", str(tmp / "r"))
    _ok("collective", "expand", str(tmp / "r"))
    return tmp / "r"


def test_show_json_matches_the_dag(run: Path):
    rows = json.loads(_ok("collective", "show", str(run), "--json"))["collectives"]
    flows = pl.read_parquet(run / "dag.parquet").filter(pl.col("kind") == "flow")
    assert sum(r["flows"] for r in rows) == flows.height
    assert sum(r["total_bytes"] for r in rows) == flows["size_bytes"].sum()
    inter = flows.filter(pl.col("src") // GPUS_PER_NODE != pl.col("dst") // GPUS_PER_NODE)
    assert sum(r["inter_server_bytes"] for r in rows) == inter["size_bytes"].sum()
    for r in rows:
        assert 0 <= r["inter_server_bytes"] <= r["total_bytes"]
        if r["group"] == "tp":  # a TP group is one server: nothing leaves it
            assert r["inter_server_bytes"] == 0
        if r["group"] == "dp" and r["flows"]:  # the dp peers sit on the other server
            assert r["inter_server_bytes"] > 0


def test_show_table_is_human_units(run: Path):
    out = _ok("collective", "show", str(run))
    assert "Flow DAG by collective" in out and "MiB" in out
    assert "_bytes" not in out  # the header drops the suffix: each cell carries its unit


def test_show_without_a_dag_is_a_clear_error(tmp_path: Path):
    r = CliRunner().invoke(app, ["collective", "show", str(tmp_path), "--json"])
    assert r.exit_code == 2 and "error:" in r.output
    assert isinstance(r.exception, SystemExit)
