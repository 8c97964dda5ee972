"""`analysis compare`: error figures from two run directories."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from wormsim.analysis.compare import CompareError, compare_runs
from wormsim.cli import app


def _run(path, fct, iteration, wall, mode):
    path.mkdir()
    pl.DataFrame({"flow_id": list(range(len(fct))), "fct_ps": fct}).write_parquet(
        path / "flows.parquet"
    )
    (path / "summary.json").write_text(
        json.dumps({"iteration_time_s": iteration, "sim_wall_s": wall, "mode": mode})
    )
    return path


def test_errors_and_speedup(tmp_path):
    ref = _run(tmp_path / "packet", [100, 200, 400, 1000], 1.0, 50.0, "packet")
    fast = _run(tmp_path / "flow", [101, 200, 396, 1000], 1.002, 0.5, "flow")
    got = compare_runs(fast, ref)
    assert got["fct_error_mean"] == pytest.approx((0.01 + 0 + 0.01 + 0) / 4)
    assert got["fct_error_max"] == pytest.approx(0.01)
    assert got["iteration_time_error"] == pytest.approx(0.002)
    assert got["speedup"] == pytest.approx(100.0)
    r = CliRunner().invoke(app, ["analysis", "compare", str(fast), str(ref), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["flows"] == 4


def test_mismatched_runs(tmp_path):
    a = _run(tmp_path / "a", [1, 2, 3], 1.0, 1.0, "packet")
    b = _run(tmp_path / "b", [1, 2], 1.0, 1.0, "packet")
    with pytest.raises(CompareError, match="different flows"):
        compare_runs(a, b)
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(tmp_path / "none")])
    assert r.exit_code == 2 and "no netsim results" in r.output
