"""Sweeps: expansion, local and Ray executors agree, resuming, isolation of bad points, Ctrl-C,
memo reuse across points, and a store shared by concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import polars as pl
import pytest
import yaml

import wormsim
from tests.pipelines.conftest import TINY, invoke
from wormsim.errors import ConfigError
from wormsim.memo import MemoStore
from wormsim.memo.fcg import build_fcg
from wormsim.memo.key import namespace_key
from wormsim.memo.records import MemoEntry
from wormsim.pipelines import sweep as sweep_mod
from wormsim.pipelines.sweep import SweepInterrupted, run_sweep
from wormsim.pipelines.sweep_spec import SweepSpec, expand_points, load_sweep

#: Columns that depend on the machine, not on what was simulated.
WALL = ["run_dir", "point_wall_s", "sim_wall_s"]


def _sweep_file(tmp: Path, **spec) -> Path:
    data = {"name": "t", "experiment": TINY, "mode": "flow", **spec}
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


FOUR = {"grid": {"network.cc": ["hpcc", "dcqcn"], "cluster.host_link_gbps": [100, 200]}}


def test_points_are_the_grid_times_zip_times_variants():
    spec = SweepSpec(
        name="x",
        experiment={},
        grid={"network.cc": ["hpcc", "dcqcn"], "cluster.host_link_gbps": [100, 200, 400]},
        zip={"parallel.tp": [4, 2], "parallel.pp": [1, 2]},
        variants={"a": {}, "b": {"sim.seed": 3}},
        set={"sim.mode": "flow"},
    )
    points = expand_points(spec)
    assert len(points) == 2 * 3 * 2 * 2
    assert spec.axes == ["network.cc", "cluster.host_link_gbps", "parallel.tp", "parallel.pp",
                         "variant"]  # fmt: skip
    p = points[-1]
    assert p.axes == {"network.cc": "dcqcn", "cluster.host_link_gbps": 400, "parallel.tp": 2,
                      "parallel.pp": 2, "variant": "b"}  # fmt: skip
    assert p.overrides[0] == "sim.mode=flow" and "sim.seed=3" in p.overrides
    assert "parallel.tp=2" in p.overrides and "parallel.pp=2" in p.overrides
    assert len({tuple(q.overrides) for q in points}) == len(points)


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"zip": {"parallel.tp": [1, 2], "parallel.pp": [1]}}, "one length"),
        ({"grid": {"network.cc": []}}, "empty"),
        ({"grid": {"network.cc": ["hpcc"]}, "zip": {"network.cc": ["hpcc"]}}, "both grid and zip"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_sweep_file_is_a_clear_error(tmp_path, spec, words):
    path = _sweep_file(tmp_path, **spec)
    with pytest.raises(ConfigError, match=words):
        load_sweep(path)
    res = invoke("pipeline", "sweep", path, "-o", tmp_path / "out")
    assert res.exit_code == 2 and res.output.startswith("error:") and "Traceback" not in res.output


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory) -> tuple[Path, Path, pl.DataFrame]:
    """Four points on two local workers, through the CLI."""
    d = tmp_path_factory.mktemp("sweep")
    path = _sweep_file(d, **FOUR)
    res = invoke("pipeline", "sweep", path, "-o", d / "local", "-j", "2", "--json")
    assert res.exit_code == 0, res.output
    return path, d / "local", pl.read_parquet(d / "local" / "sweep.parquet")


def test_a_sweep_writes_a_row_and_a_run_per_point(local_sweep):
    _, out, table = local_sweep
    assert table.height == 4 and (table["status"] == "ok").all()
    assert set(table["network.cc"]) == {"hpcc", "dcqcn"}
    for run_dir in table["run_dir"]:
        assert (out / run_dir / "report" / "report.md").is_file()
    # each row is its run: the iteration time of the run directory it names
    for run_dir, ms in zip(table["run_dir"], table["iteration_time_ms"], strict=True):
        summary = json.loads((out / run_dir / "summary.json").read_text())
        assert ms == pytest.approx(summary["iteration_time_s"] * 1e3)
    # faster NICs never make the iteration slower
    for cc in ("hpcc", "dcqcn"):
        rows = table.filter(pl.col("network.cc") == cc).sort("cluster.host_link_gbps")
        assert rows["iteration_time_ms"][1] <= rows["iteration_time_ms"][0] * 1.0001
    for axis in ("network_cc", "cluster_host_link_gbps", "point"):
        png = out / "plots" / f"iteration_time_by_{axis}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "sweep.csv").is_file() and (out / "sweep.yaml").is_file()


@pytest.mark.slow  # Ray workers running 4 points; the store test below keeps Ray in CI
def test_local_and_ray_executors_give_identical_tables(local_sweep, tmp_path):
    pytest.importorskip("ray")
    path, _, local = local_sweep
    ray_table = run_sweep(path, tmp_path / "ray", "ray", jobs=2, echo=lambda _: None)
    assert ray_table.drop(WALL).equals(local.drop(WALL))


def test_a_rerun_skips_finished_points_and_reruns_missing_ones(local_sweep, tmp_path):
    path, out, first = local_sweep
    stamps = {r: (out / r / "summary.json").stat().st_mtime_ns for r in first["run_dir"]}
    again = wormsim.sweep(path, out)
    assert again["reused"].all() and again.drop(WALL).drop("reused").equals(
        first.drop(WALL).drop("reused")
    )
    assert {r: (out / r / "summary.json").stat().st_mtime_ns for r in first["run_dir"]} == stamps
    import shutil

    gone = first["run_dir"][1]
    shutil.rmtree(out / gone)
    third = wormsim.sweep(path, out, jobs=1)
    assert third.filter(pl.col("run_dir") == gone)["reused"].to_list() == [False]
    assert third["reused"].sum() == 3
    assert third.drop(WALL).drop("reused").equals(first.drop(WALL).drop("reused"))


def test_a_bad_point_stops_the_sweep_before_anything_runs(tmp_path):
    # tp=3 does not divide the heads: checked with every other point before any runs
    path = _sweep_file(tmp_path, variants={"ok": {}, "bad": {"parallel.tp": 3}})
    res = invoke("pipeline", "sweep", path, "-o", tmp_path / "out", "-j", "1")
    assert res.exit_code == 2, res.output
    assert "1 of 2 points are invalid" in res.output and "variant=bad" in res.output
    assert "parallel.tp" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_a_misspelt_axis_exits_2_with_a_suggestion_and_leaves_nothing(tmp_path):
    path = _sweep_file(tmp_path, grid={"parallel.tpp": [2, 4]})
    res = invoke("pipeline", "sweep", path, "-o", tmp_path / "out")
    assert res.exit_code == 2, res.output
    assert "parallel.tpp: unknown key; did you mean parallel.tp?" in res.output
    assert not (tmp_path / "out").exists()
    res = invoke("pipeline", "sweep", _sweep_file(tmp_path, grid={"network.cc": ["hpcc", "nope"]}),
                 "-o", tmp_path / "out")  # fmt: skip
    assert res.exit_code == 2 and "network.cc" in res.output and "'nope'" in res.output
    assert not (tmp_path / "out").exists()


def test_ray_missing_leaves_nothing_behind(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real(name, *a))  # fmt: skip
    res = invoke("pipeline", "sweep", _sweep_file(tmp_path, **FOUR), "-o", tmp_path / "out",
                 "--executor", "ray")  # fmt: skip
    assert res.exit_code == 2 and "--executor ray needs Ray" in res.output
    assert not (tmp_path / "out").exists()


def test_a_resumed_point_keeps_the_wall_time_measured_when_it_ran(local_sweep):
    path, out, _ = local_sweep
    before = pl.read_parquet(out / "sweep.parquet")
    again = wormsim.sweep(path, out)
    assert again["reused"].all()
    assert again["point_wall_s"].to_list() == before["point_wall_s"].to_list()


def test_a_point_that_crashes_in_the_engine_does_not_stop_the_others(tmp_path, monkeypatch):
    real = sweep_mod.run_pipeline

    def flaky(cfg, out, *args, **kwargs):
        if cfg.network.cc == "dcqcn":
            raise RuntimeError("engine bug")
        return real(cfg, out, *args, **kwargs)

    monkeypatch.setattr(sweep_mod, "run_pipeline", flaky)
    table = run_sweep(_sweep_file(tmp_path, **FOUR), tmp_path / "out", jobs=1, echo=print)
    failed = table.filter(pl.col("status") == "failed")
    assert failed.height == 2 and set(failed["network.cc"]) == {"dcqcn"}
    assert (table.filter(pl.col("network.cc") == "hpcc")["status"] == "ok").all()
    text = next((tmp_path / "out" / "failed").iterdir()).read_text()
    assert "Traceback" in text and "engine bug" in text  # the full traceback is kept


def test_ctrl_c_keeps_finished_points(tmp_path, monkeypatch):
    real = sweep_mod.run_point
    calls = []

    def interrupted(task):
        calls.append(task.index)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(sweep_mod, "run_point", interrupted)
    path = _sweep_file(tmp_path, **FOUR)
    with pytest.raises(SweepInterrupted, match="1 of 4 points are complete"):
        run_sweep(path, tmp_path / "out", jobs=1, echo=lambda _: None)
    table = pl.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert table["status"].to_list().count("ok") == 1
    assert table["status"].to_list().count("not run") == 3
    monkeypatch.setattr(sweep_mod, "run_point", real)
    rest = run_sweep(path, tmp_path / "out", jobs=1, echo=lambda _: None)
    assert (rest["status"] == "ok").all() and rest["reused"].sum() == 1


#: Data parallelism only, one GPU per server: the iteration's fabric traffic is the gradient
#: all-reduce, whose contention patterns repeat from one point to the next.
DP_ONLY = {
    **TINY,
    "model": {**TINY["model"], "hidden_size": 1024, "num_layers": 2},
    "parallel": {"tp": 1, "pp": 1, "global_batch": 8},
    "cluster": {"gpus": 8, "gpus_per_node": 1, "topology": "fat_tree"},
}


def test_later_points_reuse_the_transients_earlier_points_found(tmp_path, monkeypatch):
    """Two Wormhole points whose traffic is the same (only the GPU efficiency differs): the
    second finds what the first stored in the shared store; with private stores it finds only
    what it stores itself (patterns that recur within one run, as the first point does)."""
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(tmp_path / "memo.sqlite"))
    axes = {"grid": {"hardware.efficiency": [0.5, 0.45]}, "mode": "wormhole"}
    path = _sweep_file(tmp_path, **axes)
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "experiment": DP_ONLY}))
    table = run_sweep(path, tmp_path / "out", jobs=1, echo=lambda _: None)
    first, second = table.sort("point").iter_rows(named=True)
    assert first["memo_inserts_count"] > 0
    path.write_text(yaml.safe_dump({**data, "experiment": DP_ONLY, "memo": "private"}))
    private = run_sweep(path, tmp_path / "private", jobs=1, echo=lambda _: None)
    own = private.sort("point")["memo_hits_count"].to_list()
    assert own[0] == first["memo_hits_count"]  # an empty store either way: its own entries only
    assert second["memo_hits_count"] > own[1]
    assert sorted(p.name for p in (tmp_path / "private" / "memo").iterdir()) == sorted(
        f"{k}.sqlite" for k in private["key"]
    )


def _insert_many(args: tuple[str, int, int]) -> int:
    path, offset, n = args
    store = MemoStore(path)
    key = namespace_key({"cc": "hpcc"}, strict=False)
    for i in range(offset, offset + n):
        # a distinct pattern per i: i + 2 flows on one link
        flows = [(f, 100e9, ["l0"]) for f in range(i + 2)]
        entry = MemoEntry({f: 1e9 for f in range(i + 2)}, {f: 1000 + f for f in range(i + 2)}, i)
        store.insert(build_fcg(flows), key, entry)
    store.close()
    return n


def test_two_workers_writing_one_store_concurrently_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    MemoStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert sum(pool.map(_insert_many, [(path, 0, 25), (path, 25, 25)])) == 50
    assert MemoStore(path, readonly=True).stats().entries == 50


def test_merging_worker_stores_keeps_every_entry_once(tmp_path):
    a, b, driver = (str(tmp_path / f"{n}.sqlite") for n in ("a", "b", "driver"))
    _insert_many((a, 0, 10))
    _insert_many((b, 5, 10))  # overlaps a in 5 patterns
    with MemoStore(driver) as store:
        assert store.merge(a) == 10
        assert store.merge(b) == 5
        assert store.merge(b) == 0  # merging again changes nothing
        assert store.stats().entries == 15
        snap = store.snapshot(tmp_path / "snap.sqlite")
    assert MemoStore(snap, readonly=True).stats().entries == 15


def test_a_sweep_too_large_to_run_is_refused_before_it_expands(tmp_path):
    grid = {f"k{i}": list(range(10)) for i in range(6)}  # a million points
    with pytest.raises(ConfigError, match="over the limit"):
        load_sweep(_sweep_file(tmp_path, grid=grid))


def test_a_value_listed_twice_runs_once(tmp_path):
    path = _sweep_file(tmp_path, grid={"cluster.host_link_gbps": [100, 100]})
    table = run_sweep(path, tmp_path / "out", jobs=1, echo=lambda _: None)
    assert (table["status"] == "ok").all() and table["run_dir"].n_unique() == 1
    assert table["reused"].to_list() == [False, True]
    assert len(list((tmp_path / "out" / "points").iterdir())) == 1


def test_ray_tasks_share_the_store_through_snapshots_and_merges(tmp_path, monkeypatch):
    """One task at a time: the second is submitted after the first's entries were merged into
    the driver's store, so it finds them, as on the local executor."""
    pytest.importorskip("ray")
    store = tmp_path / "memo.sqlite"
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(store))
    path = _sweep_file(tmp_path, mode="wormhole", grid={"hardware.efficiency": [0.5, 0.45]})
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "experiment": DP_ONLY}))
    table = run_sweep(path, tmp_path / "ray", "ray", jobs=1, echo=lambda _: None)
    first, second = table.sort("point").iter_rows(named=True)
    assert second["memo_hits_count"] > 0
    entries = MemoStore(store, readonly=True).stats().entries
    assert entries >= first["memo_inserts_count"] > 0


@pytest.mark.parametrize(
    "name", sorted(p.name for p in (Path(__file__).parents[2] / "examples" / "dse").glob("*.yaml"))
)
def test_every_example_sweep_is_valid_and_every_point_resolves(name):
    from wormsim.pipelines.sweep_spec import resolve_point

    spec, base = load_sweep(Path(__file__).parents[2] / "examples" / "dse" / name)
    points = expand_points(spec)
    assert len(points) >= 6
    for p in points:
        assert resolve_point(spec, base, p).sim.mode == spec.mode
