"""`analysis compare`: error figures from two run directories."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from wormsim.analysis.compare import CompareError, compare_runs, flow_errors
from wormsim.cli import app


def _run(path, fct, iteration, wall, mode, sizes=None):
    path.mkdir()
    n = len(fct)
    pl.DataFrame(
        {
            "flow_id": list(range(n)),
            "src": [i % 4 for i in range(n)],
            "dst": [(i + 1) % 4 for i in range(n)],
            "size_bytes": sizes or [1_000_000] * n,
            "fct_ps": fct,
        }
    ).write_parquet(path / "flows.parquet")
    (path / "summary.json").write_text(
        json.dumps({"iteration_time_s": iteration, "sim_wall_s": wall, "mode": mode})
    )
    return path


def test_errors_and_speedup(tmp_path):
    ref = _run(tmp_path / "packet", [100, 200, 400, 1000], 1.0, 50.0, "packet")
    fast = _run(tmp_path / "flow", [101, 200, 396, 1000], 1.002, 0.5, "flow")
    got = compare_runs(fast, ref)
    # errors are percentages under _pct keys; flow_errors gives the fractions behind them
    assert got["fct_error_mean_pct"] == pytest.approx(100 * (0.01 + 0 + 0.01 + 0) / 4)
    assert got["fct_error_max_pct"] == pytest.approx(1.0)
    assert got["iteration_time_error_pct"] == pytest.approx(0.2)
    assert got["speedup_x"] == pytest.approx(100.0)
    assert flow_errors(fast, ref) == pytest.approx([0.01, 0.0, 0.01, 0.0])
    r = CliRunner().invoke(app, ["analysis", "compare", str(fast), str(ref), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["flows_count"] == 4
    assert json.loads(r.output)["fct_error_max_pct"] == pytest.approx(1.0)


def test_mismatched_runs(tmp_path):
    a = _run(tmp_path / "a", [1, 2, 3], 1.0, 1.0, "packet")
    b = _run(tmp_path / "b", [1, 2], 1.0, 1.0, "packet")
    with pytest.raises(CompareError, match="different flows"):
        compare_runs(a, b)
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(tmp_path / "none")])
    assert r.exit_code == 2 and "no netsim results" in r.output


def test_runs_of_different_workloads_are_refused(tmp_path):
    """Same flow count, different sizes: not the same transfers, so no error figure."""
    a = _run(tmp_path / "a", [10, 20, 30], 1.0, 1.0, "packet", sizes=[100, 200, 300])
    b = _run(tmp_path / "b", [10, 20, 30], 1.0, 1.0, "packet", sizes=[100, 200, 301])
    with pytest.raises(CompareError, match="1 of 3 flows differ"):
        compare_runs(a, b)
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(b)])
    assert r.exit_code == 2 and "different workloads" in r.output
    assert isinstance(r.exception, SystemExit)


@pytest.mark.parametrize("damage", [b"", b"PAR1garbage", bytes(range(256)) * 4])
def test_damaged_flows_table_is_a_clear_error(tmp_path, damage):
    a = _run(tmp_path / "a", [10, 20], 1.0, 1.0, "packet")
    b = _run(tmp_path / "b", [10, 20], 1.0, 1.0, "packet")
    (b / "flows.parquet").write_bytes(damage)
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(b)])
    assert r.exit_code == 2, r.output
    assert "flows.parquet" in r.output and "rerun" in r.output
    assert isinstance(r.exception, SystemExit)


def test_damaged_summary_is_a_clear_error(tmp_path):
    a = _run(tmp_path / "a", [10, 20], 1.0, 1.0, "packet")
    b = _run(tmp_path / "b", [10, 20], 1.0, 1.0, "packet")
    (b / "summary.json").write_bytes(b"\xff\xfe{not json")
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(b)])
    assert r.exit_code == 2 and "summary.json" in r.output
