"""`analysis compare`: error figures from two run directories."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from wormsim.analysis.compare import CompareError, compare_runs, flow_errors
from wormsim.cli import app
from wormsim.netsim.formats.hpcc_io import node_to_ip


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
    assert got["sim_speedup_x"] == pytest.approx(100.0)
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


# --- configuration differences --------------------------------------------------------------


def _experiment(path, **sections):
    (path / "experiment.yaml").write_text(yaml.safe_dump(sections))


def test_config_diff_lists_every_differing_dotted_path(tmp_path):
    a = _run(tmp_path / "a", [10, 20], 1.0, 1.0, "flow")
    b = _run(tmp_path / "b", [10, 20], 1.0, 1.0, "packet")
    common = {"model": {"num_layers": 4, "hidden_size": 256}, "cluster": {"gpus": 16}}
    _experiment(a, **common, sim={"mode": "flow", "seed": 0}, network={"cc": "hpcc"})
    _experiment(b, **common, sim={"mode": "packet", "seed": 0}, network={"cc": "dcqcn", "x": 1})
    got = compare_runs(a, b)
    assert got["config_source"] == "experiment"
    assert got["config_diff"] == [
        {"key": "network.cc", "a": "hpcc", "b": "dcqcn"},
        {"key": "network.x", "a": None, "b": 1},  # absent from run A
        {"key": "sim.mode", "a": "flow", "b": "packet"},
    ]
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(b)], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "Configuration differences" in r.output and "network.cc" in r.output
    assert "dcqcn" in r.output and "model.num_layers" not in r.output  # equal paths not listed


def test_identical_experiments_say_so(tmp_path):
    a = _run(tmp_path / "a", [10, 20], 1.0, 1.0, "packet")
    b = _run(tmp_path / "b", [10, 20], 1.0, 1.0, "packet")
    for run in (a, b):
        _experiment(run, model={"num_layers": 4}, cluster={"gpus": 16})
    assert compare_runs(a, b)["config_diff"] == []
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(b)])
    assert r.exit_code == 0 and "identical" in r.output


def test_scenario_runs_are_compared_by_their_inputs(tmp_path):
    a = _run(tmp_path / "a", [10, 20], 1.0, 1.0, "flow")
    b = _run(tmp_path / "b", [10, 20], 1.0, 1.0, "packet")
    for run, flows in ((a, "f1.txt"), (b, "f2.txt")):
        scenario = {"topology": "t.txt", "flows": flows, "config": None}
        (run / "manifest.json").write_text(json.dumps({"scenario": scenario}))
    got = compare_runs(a, b)
    assert got["config_source"] == "scenario"
    assert got["config_diff"] == [{"key": "scenario.flows", "a": "f1.txt", "b": "f2.txt"}]


def test_runs_without_an_experiment_say_no_experiment(tmp_path):
    a = _run(tmp_path / "a", [10, 20], 1.0, 1.0, "flow")
    b = _run(tmp_path / "b", [10, 20], 1.0, 1.0, "packet")
    got = compare_runs(a, b)
    assert got["config_source"] is None and got["config_diff"] == []
    assert "no experiment" in got["config_note"]
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(b)])
    assert r.exit_code == 0 and "no experiment" in r.output


def test_damaged_experiment_is_a_clear_error(tmp_path):
    a = _run(tmp_path / "a", [10, 20], 1.0, 1.0, "flow")
    b = _run(tmp_path / "b", [10, 20], 1.0, 1.0, "packet")
    _experiment(a, model={"num_layers": 4})
    (b / "experiment.yaml").write_text("model: [unclosed\n")
    r = CliRunner().invoke(app, ["analysis", "compare", str(a), str(b)])
    assert r.exit_code == 2 and "experiment.yaml" in r.output
    assert isinstance(r.exception, SystemExit)


# --- an HPCC ns-3 fct.txt as the reference ---------------------------------------------------


def _flows_run(path, src, dst, size, start_ns, fct_ns):
    """A scenario-like run directory (flows.parquet with start_ps, summary.json)."""
    path.mkdir()
    n = len(src)
    pl.DataFrame(
        {
            "flow_id": list(range(n)),
            "src": src,
            "dst": dst,
            "size_bytes": size,
            "start_ps": [s * 1000 for s in start_ns],
            "fct_ps": [f * 1000 if f >= 0 else -1 for f in fct_ns],
        }
    ).write_parquet(path / "flows.parquet")
    (path / "summary.json").write_text(json.dumps({"mode": "packet", "sim_wall_s": 0.5}))
    return path


def _fct_file(path, rows):
    """ns-3 lines (src, dst, size, start_ns, fct_ns), node ids written as HPCC IPs."""
    path.write_text(
        "".join(
            f"{node_to_ip(s):08x} {node_to_ip(d):08x} 10000 100 {n} {t} {f} 1\n"
            for s, d, n, t, f in rows
        )
    )
    return path


def test_ns3_lines_are_matched_by_key_not_position(tmp_path):
    # flows 0 and 1 share src, dst, size and start: matched in FCT order (fast with fast)
    run = _flows_run(
        tmp_path / "a", [0, 0, 2], [1, 1, 1], [1000, 1000, 500], [0, 0, 7], [100, 300, 50]
    )
    fct = _fct_file(  # completion order, unlike flow.txt's
        tmp_path / "fct.txt", [(2, 1, 500, 7, 40), (0, 1, 1000, 0, 110), (0, 1, 1000, 0, 330)]
    )
    err = flow_errors(run, fct)
    assert err == pytest.approx([10 / 110, 30 / 330, 10 / 40])
    got = compare_runs(run, fct)
    assert got["flows_count"] == 3 and got["mode_b"] == "ns-3"
    assert got["fct_error_max_pct"] == pytest.approx(25.0)
    assert (
        got["sim_wall_b_s"] is None and got["e2e_wall_b_s"] is None and got["config_source"] is None
    )


def test_unfinished_flows_may_be_absent_from_fct_txt(tmp_path):
    run = _flows_run(tmp_path / "a", [0, 2], [1, 1], [1000, 1000], [0, 0], [100, -1])
    fct = _fct_file(tmp_path / "fct.txt", [(0, 1, 1000, 0, 100)])
    got = compare_runs(run, fct)
    assert got["flows_count"] == 1 and got["flows_unfinished_count"] == 1
    assert got["fct_error_mean_pct"] == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("rows", "lost"),
    [
        ([(0, 1, 1000, 0, 100)], "0 of the file's 1 lines and 1 of the run's 2 flows"),
        ([(0, 1, 1000, 0, 100), (2, 1, 1000, 1, 90)], "1 of the file's 2 lines and 1 of"),
        ([(0, 1, 1000, 0, 100), (2, 1, 999, 0, 90)], "1 of the file's 2 lines"),
    ],
    ids=["line-missing", "start-differs", "size-differs"],
)
def test_different_flows_are_refused_with_the_count(tmp_path, rows, lost):
    run = _flows_run(tmp_path / "a", [0, 2], [1, 1], [1000, 1000], [0, 0], [100, 80])
    fct = _fct_file(tmp_path / "fct.txt", rows)
    with pytest.raises(CompareError, match=lost):
        compare_runs(run, fct)


NS3 = Path(__file__).resolve().parents[1] / "data" / "ns3" / "joiner3" / "hp"


@pytest.fixture(scope="module")
def joiner3(tmp_path_factory) -> Path:
    """Our packet engine on the recorded joiner3/hp scenario (3 flows, late joiners)."""
    out = tmp_path_factory.mktemp("ns3") / "run"
    args = ["netsim", "run", "--topology", NS3 / "topology.txt", "--flows", NS3 / "flow.txt"]
    args += ["--config", NS3 / "config.txt", "-o", out]
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return out


def test_packet_engine_against_recorded_ns3(joiner3):
    fct = NS3 / "fct.txt"
    lines = [ln for ln in fct.read_text().splitlines() if ln.strip()]
    r = CliRunner().invoke(app, ["analysis", "compare", str(joiner3), str(fct), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["flows_count"] == len(lines) and got["flows_unfinished_count"] == 0
    assert math.isfinite(got["fct_error_mean_pct"]) and got["fct_error_mean_pct"] < 50
    assert got["fct_error_max_pct"] >= got["fct_error_p50_pct"] >= 0
    err = flow_errors(joiner3, fct)
    assert err.shape == (len(lines),) and np.all(err < 0.5)
    table = CliRunner().invoke(app, ["analysis", "compare", str(joiner3), str(fct)])
    assert table.exit_code == 0 and " %" in table.output and "ns-3" in table.output


@pytest.mark.parametrize("damage", ["drop-line", "garbage-line", "not-text"])
def test_damaged_fct_txt_is_a_one_line_error(joiner3, tmp_path, damage):
    lines = (NS3 / "fct.txt").read_text().splitlines()
    bad = tmp_path / "fct.txt"
    if damage == "drop-line":
        bad.write_text("\n".join(lines[1:]) + "\n")
    elif damage == "garbage-line":
        bad.write_text("\n".join([*lines, "this is not an ns-3 line"]) + "\n")
    else:
        bad.write_bytes(b"\xff\xfe\x00" * 50)
    r = CliRunner().invoke(app, ["analysis", "compare", str(joiner3), str(bad)])
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit)  # no traceback
    out = r.output.strip()
    assert out.startswith("error:") and "\n" not in out and str(bad) in out
    if damage == "drop-line":
        assert "1 of the run's 3 flows" in out
