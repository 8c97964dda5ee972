"""Run directories as the commands create them: atomic, never mixed, readable, traceable."""

from __future__ import annotations

import json

import polars as pl
import pytest

from wormsim.netsim.stage import SimulationIncomplete
from wormsim.pipelines import orchestrator

from .conftest import invoke


def _clean_failure(r, code: int = 2) -> None:
    assert r.exit_code == code, r.output
    assert isinstance(r.exception, SystemExit), r.exception  # no traceback
    assert r.output.startswith("error: ") or "error: " in r.output


def test_run_records_the_command_overrides_and_commit(tmp_path, tiny):
    run = tmp_path / "run"
    r = invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow", "--set", "sim.seed=7")
    assert r.exit_code == 0, r.output
    man = json.loads((run / "manifest.json").read_text())
    assert man["overrides"] == ["sim.seed=7", "sim.mode=flow"]
    assert "command" in man and man["commit"]
    assert set(man["stages"]) == {"workload", "collective", "netsim"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_rerun_into_an_existing_run_is_refused_untouched(tmp_path, tiny):
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow").exit_code == 0
    before = {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}
    r = invoke(
        "pipeline", "run", tiny, "-o", run, "--mode", "flow", "--set", "model.seq_length=256"
    )
    _clean_failure(r)
    assert "--force" in r.output
    assert {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_force_replaces_the_run_whole(tmp_path, tiny):
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny, "-o", run).exit_code == 0
    (run / "rate_samples.parquet").write_text("from an older run")
    r = invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow", "--force")
    assert r.exit_code == 0, r.output
    assert not (run / "rate_samples.parquet").exists()
    assert json.loads((run / "summary.json").read_text())["mode"] == "flow"


def test_a_failing_stage_leaves_no_run_directory(tmp_path, tiny, monkeypatch):
    def broken(*args, **kwargs):
        raise SimulationIncomplete("3 of 9 DAG nodes never finished (test)")

    monkeypatch.setattr(orchestrator, "simulate_run_dir", broken)
    run = tmp_path / "run"
    r = invoke("pipeline", "run", tiny, "-o", run)
    _clean_failure(r, code=3)  # a simulation that could not complete is not bad input
    assert "never finished" in r.output
    assert list(tmp_path.iterdir()) == [tiny]


@pytest.mark.parametrize(
    "args",
    [
        ["pipeline", "run", "{tiny}", "-o", "{run}", "--mode", "turbo"],
        ["netsim", "run", "--topology", "t", "--flows", "f", "-o", "{run}", "--cc", "reno"],
        ["netsim", "run", "--topology", "t", "--flows", "f", "-o", "{run}", "--routing", "x"],
        ["workload", "import", "{tiny}", "-o", "{run}", "--format", "pytorch"],
    ],
)
def test_choices_are_enforced(tmp_path, tiny, args):
    args = [a.format(tiny=tiny, run=tmp_path / "run") for a in args]
    r = invoke(*args)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)
    assert "Invalid value" in r.output
    assert not (tmp_path / "run").exists()


def test_monitors_outside_packet_mode_are_refused(tmp_path, tiny):
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow").exit_code == 0
    before = (run / "summary.json").read_bytes()
    r = invoke("netsim", "run", run, "--mode", "flow", "--monitor-period-ns", "1000")
    _clean_failure(r)
    assert "packet mode only" in r.output
    assert (run / "summary.json").read_bytes() == before


def test_reexpanding_drops_stale_netsim_results(tmp_path, tiny):
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow").exit_code == 0
    assert invoke("collective", "expand", run).exit_code == 0
    assert not (run / "flows.parquet").exists() and not (run / "summary.json").exists()
    assert "netsim" not in json.loads((run / "manifest.json").read_text())["stages"]
    r = invoke("analysis", "breakdown", run)
    _clean_failure(r)
    assert "netsim run" in r.output


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("nodes.parquet", ["analysis", "breakdown"]),
        ("ops.parquet", ["workload", "show"]),
        ("dag.parquet", ["collective", "show"]),
        ("dag.parquet", ["netsim", "run"]),
    ],
)
def test_damaged_run_files_are_clear_errors(tmp_path, tiny, name, command):
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow").exit_code == 0
    (run / name).write_bytes((run / name).read_bytes()[:100])
    r = invoke(*command, run)
    _clean_failure(r)
    assert name in r.output and "rerun" in r.output


def test_a_table_of_the_wrong_shape_is_refused(tmp_path, tiny):
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow").exit_code == 0
    pl.DataFrame({"node_id": [0]}).write_parquet(run / "dag.parquet")
    r = invoke("netsim", "run", run)
    _clean_failure(r)
    assert "dag.parquet" in r.output and "contract" in r.output


def test_workload_build_and_import_refuse_existing_runs(tmp_path, tiny):
    run = tmp_path / "run"
    assert invoke("workload", "build", tiny, "-o", run).exit_code == 0
    _clean_failure(invoke("workload", "build", tiny, "-o", run))
    assert invoke("workload", "build", tiny, "-o", run, "--force").exit_code == 0
