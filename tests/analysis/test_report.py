"""The report of a real run: every file written, units on every column, the breakdown
partitions every rank's iteration, the trace has one slice per op, SimAI's CSV adds up, and
``wormsim.run`` gives the numbers ``pipeline run`` gives."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

import wormsim
from tests.pipelines.conftest import TINY, invoke
from wormsim.analysis.breakdown import CATEGORIES
from wormsim.analysis.report import REPORT_DIR
from wormsim.analysis.units import has_unit

TABLES = ("breakdown", "ranks", "collectives", "flow_stats", "links", "tiers")
PLOTS = ("timeline", "fct_slowdown_cdf", "link_utilisation", "busbw")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny experiment through ``pipeline run`` (packet mode, report included)."""
    d = tmp_path_factory.mktemp("report")
    exp = d / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    res = invoke("pipeline", "run", exp, "-o", d / "run", "--json")
    assert res.exit_code == 0, res.output
    return d / "run"


def test_every_report_file_is_written(run_dir: Path):
    rep = run_dir / REPORT_DIR
    for name in TABLES:
        assert pl.read_parquet(rep / f"{name}.parquet").height > 0, name
        assert (rep / f"{name}.csv").stat().st_size > 0, name
    for name in PLOTS:
        data = (rep / "plots" / f"{name}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000, name
    text = (rep / "report.md").read_text()
    for name in PLOTS:
        assert f"plots/{name}.png" in text
    assert "```yaml" in text and "name: tiny" in text  # the resolved experiment
    assert "Engine counters" in text


def test_every_report_column_carries_its_unit(run_dir: Path):
    for name in (*TABLES, "flows"):
        cols = pl.read_parquet(run_dir / REPORT_DIR / f"{name}.parquet").columns
        missing = [c for c in cols if not has_unit(c)]
        assert not missing, f"{name}: {missing}"


def test_the_breakdown_sums_to_the_iteration_on_every_rank(run_dir: Path):
    ranks = pl.read_parquet(run_dir / REPORT_DIR / "ranks.parquet")
    iteration_us = json.loads((run_dir / "summary.json").read_text())["iteration_time_s"] * 1e6
    total = ranks.select(pl.sum_horizontal(f"{c}_us" for c in CATEGORIES)).to_series()
    assert total.to_list() == pytest.approx([iteration_us] * ranks.height, rel=1e-9)
    assert ranks.height == TINY["cluster"]["gpus"]
    bd = pl.read_parquet(run_dir / REPORT_DIR / "breakdown.parquet")
    parts = bd.filter(pl.col("category") != "overlap")
    for col in ("critical_rank_us", "critical_path_us"):
        assert parts[col].sum() == pytest.approx(iteration_us, rel=1e-9), col
    assert parts["critical_rank_pct"].sum() == pytest.approx(100.0)
    # a pipeline (pp=2) has a bubble; its last stage waits for the first activations
    assert bd.filter(pl.col("category") == "bubble")["mean_rank_us"][0] > 0


def test_trace_has_one_complete_slice_per_op(run_dir: Path):
    trace = json.loads((run_dir / REPORT_DIR / "trace.json").read_text())
    ops = pl.read_parquet(run_dir / "ops.parquet")
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["args"]["op_id"] for e in slices) == ops["op_id"].to_list()
    assert {e["pid"] for e in slices} == set(ops["rank"].unique().to_list())
    for e in slices:
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert {"group", "size_bytes", "flows"} <= set(e["args"])


def test_collectives_table_covers_every_instance(run_dir: Path):
    colls = pl.read_parquet(run_dir / REPORT_DIR / "collectives.parquet")
    ops = pl.read_parquet(run_dir / "ops.parquet").filter(pl.col("kind") == "comm")
    assert sorted(colls["coll_id"].to_list()) == sorted(ops["coll_id"].unique().to_list())
    assert (colls["end_us"] >= colls["start_us"]).all()
    timed = colls.filter(pl.col("duration_us") > 0)
    # alone on an idle fabric is never much slower than inside the iteration
    assert timed["slowdown_x"].min() > 0.9
    dag = pl.read_parquet(run_dir / "dag.parquet")
    assert colls["flows_count"].sum() == (dag["kind"] == "flow").sum()


def test_links_carry_every_fabric_byte(run_dir: Path):
    links = pl.read_parquet(run_dir / REPORT_DIR / "links.parquet")
    flows = pl.read_parquet(run_dir / REPORT_DIR / "flows.parquet")
    fabric = flows.filter(~pl.col("tier").is_in(["nvlink", "local"]))["size_bytes"].sum()
    up = links.filter(pl.col("tier") == "host→leaf")["payload_bytes"].sum()
    assert up == fabric
    assert links["utilisation_pct"].is_between(0, 100).all()


def test_endtoend_csv_follows_simai_layout(run_dir: Path):
    rows = list(csv.reader((run_dir / REPORT_DIR / "EndToEnd.csv").read_text().splitlines()))
    assert rows[0][0] == "layer_name" and rows[0][2] == "fwd compute" and len(rows[0]) == 18
    assert rows[0].count("busbw") == 3
    names = [r[0] for r in rows]
    s = names.index("SUM")
    layers = rows[1:s]
    assert any(r[0].startswith("layer") for r in layers)
    # the SUM row adds the layer rows (compute columns)
    for col in (2, 4):
        assert float(rows[s][col]) == pytest.approx(sum(float(r[col]) for r in layers), abs=0.01)
    total = rows[s + 1]
    assert total[0] == "total exposed comm" and total[4] == "total time"
    summary = rows[s + 3]
    assert summary[-1].endswith("(100.00%)")


def test_api_gives_the_numbers_pipeline_run_gives(run_dir: Path, tmp_path: Path):
    run = wormsim.run(TINY, mode="packet")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert run.iteration_time_s == summary["iteration_time_s"]
    assert run.run_dir is None
    flows = pl.read_parquet(run_dir / "flows.parquet").sort("flow_id")
    assert run.flows.sort("flow_id")["fct_ps"].to_list() == flows["fct_ps"].to_list()
    on_disk = pl.read_parquet(run_dir / REPORT_DIR / "breakdown.parquet")
    assert run.breakdown.equals(on_disk)
    assert (
        run.collectives.height
        == pl.read_parquet(run_dir / REPORT_DIR / "collectives.parquet").height
    )
    out = run.report(tmp_path / "again")
    assert (out / "report.md").is_file() and (out / "trace.json").is_file()


def test_api_overrides_and_out(tmp_path: Path):
    run = wormsim.run(TINY, mode="flow", overrides={"parallel.pp": 1}, out=tmp_path / "r",
                      alone=False)  # fmt: skip
    assert run.config.parallel.pp == 1 and run.mode == "flow"
    assert (tmp_path / "r" / REPORT_DIR / "report.md").is_file()
    assert "slowdown_x" not in run.collectives.columns  # no idle-fabric replay asked for
    assert run.breakdown.filter(pl.col("category") == "bubble").height == 0  # no pipeline


def test_report_command_rewrites_the_report(run_dir: Path, tmp_path: Path):
    res = invoke("analysis", "report", run_dir, "-o", tmp_path / "rep", "--no-alone", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["mode"] == "packet" and out["report"].endswith("report.md")
    assert (tmp_path / "rep" / "trace.json").is_file()
    assert "slowdown_x" not in pl.read_parquet(tmp_path / "rep" / "collectives.parquet").columns


def test_breakdown_command_json(run_dir: Path):
    res = invoke("analysis", "breakdown", run_dir, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    cats = {r["category"] for r in out["breakdown"]}
    assert {"compute", "bubble", "idle"} <= cats
    assert "finishes last" in out["slowest_rank"]
    text = invoke("analysis", "breakdown", run_dir)
    assert text.exit_code == 0 and "slowest rank" in text.output
    assert re.search(r"finishes last at [\d.,]+ (ms|µs|s)\b", text.output)  # in human units


def test_report_of_an_incomplete_run_is_a_clear_error(tmp_path: Path):
    res = invoke("analysis", "report", tmp_path)
    assert res.exit_code == 2
    assert res.output.startswith("error:") and "Traceback" not in res.output


def test_compare_draws_the_error_histogram(run_dir: Path, tmp_path: Path):
    png = tmp_path / "err.png"
    res = invoke("analysis", "compare", run_dir, run_dir, "--plot", png, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["fct_error_max_pct"] == 0.0  # a run against itself
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_rank_table_is_every_rank_breakdown(run_dir: Path):
    from wormsim.analysis.breakdown import op_intervals, rank_breakdown, rank_breakdown_table
    from wormsim.analysis.run_data import load_run

    run = load_run(run_dir)
    start, finish = run.nodes["start_ps"].to_numpy(), run.nodes["finish_ps"].to_numpy()
    iv = op_intervals(run.ops, start, finish)
    table = rank_breakdown_table(iv, run.iteration_ps)
    for row in table.iter_rows(named=True):
        mine = rank_breakdown(iv.filter(pl.col("rank") == row["rank"]), run.iteration_ps)
        assert all(row[k] == v for k, v in mine.items()), row["rank"]


def test_a_large_report_stays_bounded_and_says_what_it_left_out(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from wormsim.analysis import report
    from wormsim.analysis.run_data import load_run

    rep = report.analyse(load_run(run_dir))
    monkeypatch.setattr(report, "REPORT_CSV_ROWS", 3)
    monkeypatch.setattr(report, "REPORT_FLOW_ROWS", 3)
    monkeypatch.setattr(report, "REPORT_TRACE_EVENTS", 40)
    out = report.write_report(rep, tmp_path / "rep")
    assert rep.collectives.height > 3 and rep.flows.height > 3
    assert pl.read_parquet(out / "collectives.parquet").height == rep.collectives.height
    assert not (out / "collectives.csv").exists() and not (out / "flows.parquet").exists()
    assert (out / "breakdown.csv").exists() or rep.breakdown.height > 3
    trace = json.loads((out / "trace.json").read_text())
    # whole ranks are kept, evenly spread, about the bound's worth
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) < min(rep.intervals.height, 80)
    text = (out / "report.md").read_text()
    for needle in ("Size bounds", "`collectives.csv` is not written", "`flows.parquet` is not"):
        assert needle in text, needle
    assert "The trace is bounded" in text
