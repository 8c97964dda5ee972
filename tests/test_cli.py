"""The ``wormsim`` command's conventions: --version, --quiet, --json on every command with a
result, documented exit codes, and numbers for people (never in scientific notation)."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from wormsim import __version__
from wormsim.analysis import units
from wormsim.analysis.breakdown import CATEGORIES, slowest_rank_reason
from wormsim.humanize import human_count, human_number, human_time

from .pipelines.conftest import invoke
from .pipelines.conftest import tiny as tiny  # the fixture

SCI = re.compile(r"(?<![0-9A-Za-z])\d+(\.\d+)?[eE][+-]\d+(?![0-9A-Za-z])")  # 2.185e+04, 1e-05
NS3 = "tests/data/ns3/dumbbell8/dctcp"


def test_version():
    r = invoke("--version")
    assert r.exit_code == 0 and r.output.strip() == f"wormsim {__version__}"


def test_exit_codes_are_documented():
    r = invoke("--help")
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for code in ("0 done", "1 some sweep points failed", "2 bad input", "3 the simulation", "130"):
        assert code in text


def _json(*args):
    r = invoke(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)  # stderr (a compile notice, progress) is not part of it


def test_every_command_with_a_result_prints_json(tmp_path, tiny):
    run, again, imported = tmp_path / "run", tmp_path / "again", tmp_path / "imported"
    assert _json("workload", "build", tiny, "-o", run)["ops_count"] > 0
    assert _json("workload", "show", run)["summary"]
    assert _json("collective", "expand", run)["flows_count"] > 0
    assert _json("collective", "show", run)["collectives"]
    assert _json("netsim", "run", run, "--mode", "flow")["iteration_time_s"] > 0
    assert _json("analysis", "breakdown", run)["breakdown"]
    assert _json("analysis", "report", run)["iteration_time_s"] > 0
    assert _json("pipeline", "validate", tiny)["parallel"]["tp"] == 4
    assert _json("pipeline", "run", tiny, "-o", again, "--mode", "flow")["iteration_time_s"] > 0
    assert _json("analysis", "compare", again, run)["iteration_time_error_pct"] == 0.0
    exported = tmp_path / "rank0.txt"
    assert _json("workload", "export", run, "-o", exported)["file"] == str(exported)
    assert _json("workload", "import", exported, "-o", imported)["ops_count"] > 0
    scenario = ["--topology", f"{NS3}/topology.txt", "--flows", f"{NS3}/flow.txt"]
    out = _json("netsim", "run", *scenario, "--mode", "flow", "-o", tmp_path / "scenario")
    assert out["flows_finished_count"] == out["flows_count"] == 8
    store = ["--store", tmp_path / "memo.sqlite"]
    from wormsim.memo import MemoStore

    MemoStore(tmp_path / "memo.sqlite").close()  # an empty store
    assert _json("memo", "stats", *store)
    assert _json("memo", "inspect", *store)["entries"] == []
    assert _json("memo", "clear", *store, "--yes")["deleted_count"] == 0


def test_quiet_silences_progress(tmp_path, tiny, monkeypatch):
    from wormsim import progress

    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    r = invoke("--quiet", "pipeline", "run", tiny, "-o", tmp_path / "run", "--mode", "flow")
    assert r.exit_code == 0, r.output
    assert "flow simulation:" not in r.output
    assert progress.enabled() is False
    invoke("--version")  # the next command shows progress again
    assert invoke("pipeline", "schema").exit_code == 0 and progress.enabled()


def test_set_and_wormhole_take_one_syntax(tmp_path, tiny):
    bad_set = invoke("pipeline", "validate", tiny, "--set", "parallel.tp")
    scenario = ["--topology", f"{NS3}/topology.txt", "--flows", f"{NS3}/flow.txt"]
    bad_wh = invoke(
        "netsim", "run", *scenario, "-o", tmp_path / "s", "--mode", "wormhole", "--wormhole", "x"
    )
    for r, flag in ((bad_set, "--set"), (bad_wh, "--wormhole")):
        assert r.exit_code == 2
        assert f"{flag} 'parallel.tp': write it as KEY=VALUE" in r.output or (
            f"{flag} 'x': write it as KEY=VALUE" in r.output
        )
    for cmd in (("pipeline", "run"), ("pipeline", "validate"), ("workload", "build")):
        help_text = invoke(*cmd, "--help").output
        assert "KEY=VALUE" in help_text and "list[str]" not in help_text


def test_a_scenario_with_a_bad_input_fails_before_the_compile_notice(tmp_path, monkeypatch):
    """``netsim run`` reads and checks its inputs before it says the kernels will compile: a
    missing flow file exits 2 with the file named, no notice and no output folder."""
    from wormsim.netsim.common import warmup

    monkeypatch.setattr(warmup, "kernels_cached", lambda mode: False)
    out = tmp_path / "s"
    scenario = ["--topology", f"{NS3}/topology.txt", "--flows", str(tmp_path / "none.txt")]
    r = invoke("netsim", "run", *scenario, "-o", out, "--mode", "wormhole")
    assert r.exit_code == 2, r.output
    assert "none.txt" in r.output and "compiling" not in r.output and not out.exists()


@pytest.mark.parametrize("exp", range(-7, 19))
def test_numbers_for_people_are_never_scientific(exp):
    for mantissa in (1.0, 2.185, 9.999):
        x = mantissa * 10.0**exp
        shown = [human_number(x), human_number(x, 4, trim=True), human_count(x), human_time(x)]
        shown += [units.format_value(f"v{suffix}", x) for suffix in units.UNIT_SUFFIXES]
        shown.append(units.format_value("v", x))
        assert not [s for s in shown if SCI.search(s)], shown


def test_the_slowest_rank_sentence_of_a_large_run_reads_in_human_units():
    # the case of a 128-GPU run: a rank 21.85 ms past the mean (was "2.185e+04 µs")
    zero = {f"{c}_ps": [0, 0] for c in CATEGORIES}
    table = pl.DataFrame(
        {
            **zero,
            "rank": [0, 1],
            "finish_ps": [90_000_000_000, 120_000_000_000],
            "compute_ps": [50_000_000_000, 50_000_000_000],
            "exposed_dp_ps": [18_150_000_000, 62_000_000_000],
        }
    )
    text = slowest_rank_reason(table)
    assert not SCI.search(text)
    assert "21.93 ms more than the mean rank" in text


def test_a_report_holds_no_scientific_notation(tmp_path, tiny):
    run = tmp_path / "run"
    r = invoke("pipeline", "run", tiny, "-o", run, "--mode", "flow")
    assert r.exit_code == 0, r.output
    assert not SCI.search(r.output)
    report = (run / "report" / "report.md").read_text()
    assert not SCI.search(report.replace(str(run), ""))
