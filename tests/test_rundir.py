"""Run directories: staged creation, refusal to overwrite, permissions, safe reads."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import polars as pl
import pytest

from wormsim.errors import UnreadableFileError
from wormsim.rundir import (
    Manifest,
    RunDirExists,
    read_json,
    read_parquet,
    staged_run_dir,
    write_json,
    write_parquet,
)


def _make_run(path: Path, marker: str) -> None:
    with staged_run_dir(path) as d:
        (d / "marker.txt").write_text(marker)
        Manifest(d).save()


def test_a_failed_run_leaves_nothing(tmp_path):
    target = tmp_path / "run"
    with pytest.raises(RuntimeError), staged_run_dir(target) as d:
        (d / "ops.parquet").write_text("half")
        raise RuntimeError("stage failed")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # no staging directory left behind either


def test_existing_run_is_refused_and_untouched(tmp_path):
    target = tmp_path / "run"
    _make_run(target, "first")
    with pytest.raises(RunDirExists, match="--force"), staged_run_dir(target):
        pass
    assert (target / "marker.txt").read_text() == "first"


def test_force_replaces_the_run_whole(tmp_path):
    target = tmp_path / "run"
    _make_run(target, "first")
    (target / "old_only.txt").write_text("stale")
    with staged_run_dir(target, force=True) as d:
        (d / "marker.txt").write_text("second")
        Manifest(d).save()
    assert (target / "marker.txt").read_text() == "second"
    assert not (target / "old_only.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_force_never_deletes_a_folder_that_is_not_a_run(tmp_path):
    target = tmp_path / "home"
    target.mkdir()
    (target / "thesis.tex").write_text("precious")
    with pytest.raises(RunDirExists, match="not a wormsim run directory"):
        with staged_run_dir(target, force=True):
            pass
    assert (target / "thesis.tex").read_text() == "precious"


def test_an_empty_existing_directory_is_fine(tmp_path):
    target = tmp_path / "run"
    target.mkdir()
    _make_run(target, "x")
    assert (target / "marker.txt").read_text() == "x"


def test_files_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        target = tmp_path / "run"
        with staged_run_dir(target) as d:
            write_json(d / "summary.json", {"a": 1})
            write_parquet(d / "t.parquet", pl.DataFrame({"x": [1]}))
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert stat.S_IMODE((target / "summary.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((target / "t.parquet").stat().st_mode) == 0o644


def test_manifest_records_command_overrides_versions_commit(tmp_path):
    man = Manifest(tmp_path)
    man.invocation(["sim.seed=3"], argv=["/usr/bin/wormsim", "pipeline", "run", "e.yaml"])
    man.save()
    data = read_json(tmp_path / "manifest.json", "x")
    assert data["command"] == "wormsim pipeline run e.yaml"
    assert data["overrides"] == ["sim.seed=3"]
    assert data["versions"]["wormsim"] and data["commit"]


@pytest.mark.parametrize("content", [b"", b"PAR1\x00\x01", os.urandom(512)])
def test_damaged_parquet_names_the_file(tmp_path, content):
    path = tmp_path / "ops.parquet"
    path.write_bytes(content)
    with pytest.raises(UnreadableFileError, match="ops.parquet.*wormsim workload build"):
        read_parquet(path, "wormsim workload build")


def test_truncated_parquet_names_the_file(tmp_path):
    path = tmp_path / "dag.parquet"
    pl.DataFrame({"x": list(range(1000))}).write_parquet(path)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(UnreadableFileError, match="dag.parquet"):
        read_parquet(path, "wormsim collective expand")


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "nodes.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(path)
    with pytest.raises(UnreadableFileError, match="nodes.parquet"):
        read_parquet(path, "wormsim netsim run", ["start_ps"])
