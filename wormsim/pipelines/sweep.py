"""Sweeps: every point of a sweep file run as its own pipeline, on a local process pool or Ray.

``wormsim pipeline sweep SWEEP.yaml -o SWEEP_DIR`` (and :func:`run_sweep`, :func:`wormsim.sweep`)
writes::

    SWEEP_DIR/
      sweep.yaml            the sweep file as run (resolved)
      sweep.parquet, .csv   one row per point: axes, status, error, iteration time, breakdown,
                            wall time, engine and Wormhole counters (units in the names)
      points/<slug>-<key>/  each point's run directory (report included)
      failed/<key>.txt      the full error of a failed point
      plots/iteration_time_by_point.png   each point's time, split by where it goes
      plots/iteration_time_by_<axis>.png

*Resuming.* A point whose run directory ``points/<slug>-<key>`` exists complete (``summary.json``
and its report) is not run again; its row is read back (``reused`` true). ``key`` hashes the
point's resolved experiment (:func:`~wormsim.pipelines.sweep_spec.point_key`). Failed points have
no run directory (run directories appear whole or not at all), so a rerun retries them. A failing
point is recorded with its error and never stops the others; Ctrl-C stops the sweep, keeps every
finished point and says so.

*Executors.* ``local`` (default) runs ``jobs`` points at a time in a process pool (spawned
workers; ``jobs=1`` runs them in this process). ``ray`` runs them as Ray tasks on the cluster at
``address`` or on a local Ray instance with ``jobs`` CPUs; a task runs its point in a temporary
directory on its worker and returns the run directory as a tar archive, which the driver unpacks
into ``points/``, so workers need no shared file system.

*The memo store* (Wormhole mode). ``memo: shared`` (default): every point reads and writes one
store, the experiment's ``sim.wormhole.memo_path`` or the default store, so later points (and
later sweeps) reuse the transients earlier ones found. Local workers open that SQLite file
directly: its writers serialise on a write lock and an insert that finds an isomorphic entry keeps
the first writer's value (:mod:`wormsim.memo.store`), so concurrent points lose nothing. A Ray
task may run where that file is not, so it gets a snapshot of the driver's store as it was when
the task was submitted, runs against its own copy, and returns the copy; the driver merges the
entries it lacks (first writer wins, as above). Consistency rule: a point sees every entry merged
before it was submitted, never one found by a point running at the same time; entries are
immutable, so merging in any order gives the same store. ``memo: private`` gives every point an
empty store of its own (``SWEEP_DIR/memo/<key>.sqlite``), for measuring what sharing buys.
Because a memo hit replays a stored transient, a Wormhole sweep's figures can depend on which
points ran before which; ``memo_hits_count`` says where that happened.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl

from wormsim.analysis.units import human_time
from wormsim.errors import ConfigError, WormsimError
from wormsim.experiment import ExperimentConfig, parse_experiment
from wormsim.memo import MemoStore, resolve_store_path
from wormsim.progress import muted
from wormsim.progress import task as task_progress
from wormsim.run_inputs import changed_inputs
from wormsim.rundir import (
    atomic_write,
    read_json,
    read_parquet,
    staged_dir,
    write_json,
    write_parquet,
    write_text,
)
from wormsim.units import MS_PER_S_F, PS_PER_MS_F

from .orchestrator import run_pipeline
from .sweep_spec import SweepPoint, SweepSpec, expand_points, load_sweep, point_key, resolve_all

__all__ = [
    "EXECUTORS",
    "SweepInterrupted",
    "PointTask",
    "PointOutcome",
    "run_point",
    "point_row",
    "run_sweep",
]

#: Where points run.
EXECUTORS = ("local", "ray")

Executor = Literal["local", "ray"]

#: ``summary.json`` keys copied into the sweep table, with their column names.
_COUNTERS = {
    "sim_wall_s": "sim_wall_s",
    "events_processed": "events_count",
    "flows": "flows_count",
    "bytes_skipped": "skipped_bytes",
    "skips": "skips_count",
    "memo_hits": "memo_hits_count",
    "memo_misses": "memo_misses_count",
    "memo_inserts": "memo_inserts_count",
}


class SweepInterrupted(WormsimError):
    """Ctrl-C: the sweep stopped; finished points were kept (the message says how many)."""


@dataclass(frozen=True)
class PointTask:
    """What a worker needs to run one point (picklable)."""

    index: int
    key: str
    experiment: dict[str, Any]
    run_dir: str
    memo_path: str | None = None
    alone: bool = False
    store_snapshot: bytes | None = None
    ship: bool = False


@dataclass
class PointOutcome:
    """What a worker sends back."""

    index: int
    key: str
    status: str
    error: str | None = None
    row: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    run_tar: bytes | None = None
    store: bytes | None = None


def point_row(summary: dict[str, Any], breakdown: pl.DataFrame) -> dict[str, Any]:
    """A point's figures: iteration time, the critical rank's breakdown (%), counters."""
    row: dict[str, Any] = {"iteration_time_ms": float(summary["iteration_time_s"]) * MS_PER_S_F}
    for cat, pct in zip(breakdown["category"], breakdown["critical_rank_pct"], strict=True):
        if cat != "overlap":
            row[f"{cat}_pct"] = float(pct)
    for key, col in _COUNTERS.items():
        if key in summary:
            row[col] = summary[key]
    return row


def _tar(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    return buf.getvalue()


def _untar(data: bytes, target: Path) -> None:
    """Unpack a shipped run directory into ``target`` (whole or not at all)."""
    with staged_dir(target) as stage, tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(stage, filter="data")


def run_point(task: PointTask) -> PointOutcome:
    """Run one point (in a worker): its pipeline into ``task.run_dir``; errors are caught and
    returned, so one bad point never stops the others."""
    t0 = time.perf_counter()
    out = PointOutcome(task.index, task.key, "ok")
    with tempfile.TemporaryDirectory(prefix="wormsim-point-") as tmp, muted():
        run_dir = Path(tmp) / "run" if task.ship else Path(task.run_dir)
        try:
            cfg = parse_experiment(task.experiment)
            memo_path = task.memo_path
            if task.store_snapshot is not None:  # Ray, shared store: its snapshot
                memo_path = str(Path(tmp) / "memo.sqlite")
                Path(memo_path).write_bytes(task.store_snapshot)
            elif task.ship and memo_path is not None:  # Ray, private store: a fresh one here
                memo_path = str(Path(tmp) / "memo.sqlite")
            if memo_path is not None:
                cfg = _with_memo_path(cfg, memo_path)
            res = run_pipeline(cfg, run_dir, force=True, alone=task.alone)
            out.row = point_row(res.summary, res.breakdown)
            if task.ship:
                out.run_tar = _tar(run_dir)
                if memo_path is not None and Path(memo_path).exists():
                    out.store = MemoStore(memo_path).snapshot(Path(tmp) / "out.sqlite").read_bytes()
        except WormsimError as exc:
            out.status, out.error = "failed", str(exc)
        except Exception:  # a bug: keep the traceback for the report
            out.status, out.error = "failed", traceback.format_exc()
    out.wall_s = time.perf_counter() - t0
    return out


def _with_memo_path(cfg: ExperimentConfig, path: str) -> ExperimentConfig:
    wormhole = cfg.sim.wormhole.model_copy(update={"memo_path": path})
    return cfg.model_copy(update={"sim": cfg.sim.model_copy(update={"wormhole": wormhole})})


def _run_dir(out: Path, point: SweepPoint, key: str) -> Path:
    return out / "points" / f"{point.slug}-{key}"


def _earlier_runs(out: Path, point: SweepPoint, run_dir: Path) -> list[Path]:
    """Run directories of the same point label under other keys (an earlier sweep's)."""
    folder = out / "points"
    if not folder.is_dir():
        return []
    return sorted(
        d
        for d in folder.glob(f"{point.slug}-*")
        if d != run_dir and d.name.rsplit("-", 1)[0] == point.slug
    )


def _reuse(run_dir: Path) -> dict[str, Any] | None:
    """The row of a complete earlier run of the point, or None."""
    summary = run_dir / "summary.json"
    breakdown = run_dir / "report" / "breakdown.parquet"
    if not (summary.is_file() and breakdown.is_file()):
        return None
    how = "wormsim pipeline sweep"
    row = point_row(read_json(summary, how), read_parquet(breakdown, how))
    manifest = run_dir / "manifest.json"
    data = read_json(manifest, how) if manifest.is_file() else {}
    measured = data.get("sweep_point", {}).get("wall_s")
    if measured is None:  # a run directory from before the wall time was recorded
        measured = sum(st.get("wall_s", 0.0) for st in data.get("stages", {}).values())
    row["point_wall_s"] = float(measured)
    return row


def _record_wall(run_dir: Path, wall_s: float) -> None:
    """Keep the point's wall time as measured when it ran in its manifest, so a resumed sweep
    reports that figure and not the sum of the stages."""
    manifest = run_dir / "manifest.json"
    data = read_json(manifest, "wormsim pipeline sweep")
    data["sweep_point"] = {"wall_s": wall_s}
    write_json(manifest, data)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _point_line(label: str, outcome: PointOutcome) -> str:
    """One line per finished point: its iteration time or why it failed, and its wall time."""
    what = (
        f"{human_time(outcome.row['iteration_time_ms'] * PS_PER_MS_F)}"
        if outcome.status == "ok"
        else f"FAILED: {(outcome.error or '').strip().splitlines()[-1][:120]}"
    )
    return f"{label}: {what} ({outcome.wall_s:.1f} s)"


def _local(
    tasks: Sequence[PointTask], jobs: int
) -> Iterator[tuple[Callable[[], int], PointOutcome]]:
    """Run tasks on a spawned process pool (in this process for one job); yield outcomes as
    they finish, with a callable that says how many are still running."""
    if jobs <= 1:
        for task in tasks:
            yield (lambda: 0), run_point(task)
        return
    import multiprocessing

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        pending: set[Future[PointOutcome]] = {pool.submit(run_point, t) for t in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                left = len(pending)
                yield (lambda left=left: min(left, jobs)), fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ray(
    tasks: Sequence[PointTask],
    jobs: int,
    address: str | None,
    store: MemoStore | None,
) -> Iterator[tuple[Callable[[], int], PointOutcome]]:
    """Run tasks as Ray tasks, at most ``jobs`` in flight, each with a fresh store snapshot."""
    _require_ray()
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=jobs, **kwargs)
    remote = ray.remote(num_cpus=1)(run_point)
    queue = list(tasks)
    in_flight: dict[Any, PointTask] = {}
    try:
        while queue or in_flight:
            while queue and len(in_flight) < jobs:
                task = queue.pop(0)
                if store is not None:
                    with tempfile.TemporaryDirectory() as tmp:
                        snap = store.snapshot(Path(tmp) / "snap.sqlite").read_bytes()
                    task = PointTask(**{**task.__dict__, "store_snapshot": snap, "ship": True})
                else:
                    task = PointTask(**{**task.__dict__, "ship": True})
                in_flight[remote.remote(task)] = task
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                in_flight.pop(ref)
                yield (lambda: len(in_flight)), ray.get(ref)
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()


def _require_ray() -> None:
    """Refuse ``--executor ray`` without Ray installed (checked before anything is created)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'wormsim[ray]' (or use --executor local)"
        )


def _table(
    spec: SweepSpec, points: list[SweepPoint], rows: dict[int, dict[str, Any]]
) -> pl.DataFrame:
    records = []
    for p in points:
        base = {"point": p.index, "label": p.label}
        base.update({k: (v if isinstance(v, str) else str(v)) for k, v in p.axes.items()})
        records.append({**base, **rows.get(p.index, {"status": "not run"})})
    table = pl.DataFrame(records, infer_schema_length=None)
    return table.select(sorted(table.columns, key=lambda c: _column_rank(c, spec.axes)))


def _column_rank(col: str, axes: list[str]) -> tuple[int, int]:
    """Column order of the sweep table: point, label, axes, status and run facts, iteration
    time, the breakdown in its category order, counters."""
    from wormsim.analysis.breakdown import CATEGORIES

    head = ["point", "label", *axes, "status", "reused", "error", "run_dir", "key",
            "point_wall_s", "iteration_time_ms"]  # fmt: skip
    if col in head:
        return (0, head.index(col))
    cats = [f"{c}_pct" for c in CATEGORIES]
    if col in cats:
        return (1, cats.index(col))
    counters = list(_COUNTERS.values())
    return (2, counters.index(col) if col in counters else len(counters))


def run_sweep(
    sweep: Path | Mapping[str, Any],
    out: Path,
    executor: Executor = "local",
    address: str | None = None,
    jobs: int | None = None,
    *,
    alone: bool = False,
    echo: Callable[[str], None] | None = None,
) -> pl.DataFrame:
    """Run every point of a sweep file; returns (and writes) the sweep table.

    Parameters
    ----------
    sweep : Path
        The sweep file (:mod:`~wormsim.pipelines.sweep_spec`), or its contents as a mapping.
    out : Path
        The sweep directory (created; an earlier run of the same sweep there is resumed).
    executor : {"local", "ray"}
    address : str, optional
        Ray: the cluster address (default: start a local Ray instance).
    jobs : int, optional
        Points run at once (default: the machine's CPUs; Ray on a cluster: 1 per point at a
        time up to ``jobs``, default the cluster's CPUs).
    alone : bool
        Also replay each point's collectives alone for its report (costly; off by default).
    echo : callable, optional
        Where the line of each finished point goes (default: stderr, above the progress bar).

    Returns
    -------
    polars.DataFrame
        ``sweep.parquet``: ``point``, ``label``, one column per axis (values as text),
        ``status`` (``ok``, ``failed``, ``not run``), ``reused``, ``error``, ``run_dir``
        (relative to ``out``),
        ``key``, ``point_wall_s``, ``iteration_time_ms``, ``<category>_pct`` of the critical
        rank, and the counters (``sim_wall_s``, ``events_count``, ``memo_hits_count``, ...).

    Raises
    ------
    ConfigError
        A bad sweep file, or ``--executor ray`` without Ray installed.
    SweepInterrupted
        Ctrl-C; the finished points are kept.
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {jobs}")
    spec, base_dir = load_sweep(sweep)
    points = expand_points(spec)
    source = str(sweep) if not isinstance(sweep, Mapping) else "the sweep"
    resolved = resolve_all(spec, base_dir, points, source)  # nothing is created before this
    if executor == "ray":
        _require_ray()
    out = Path(out)
    (out / "points").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "failed", ignore_errors=True)  # the previous run's failures: retried
    write_text(out / "sweep.yaml", _spec_yaml(spec, base_dir))
    jobs = jobs or (os.cpu_count() or 1)
    rows: dict[int, dict[str, Any]] = {}
    tasks: list[PointTask] = []
    labels: dict[int, str] = {}
    shared_store: Path | None = None
    twins: dict[Path, list[int]] = {}
    for p in points:
        labels[p.index] = p.label
        cfg = resolved[p.index]
        key = point_key(cfg)
        run_dir = _run_dir(out, p, key)
        if run_dir in twins:  # the same point again (a value listed twice): run it once
            twins[run_dir].append(p.index)
            continue
        twins[run_dir] = []
        kept = _reuse(run_dir)
        if kept is None:  # the key hashes input contents: an edited input makes a new key
            for old in _earlier_runs(out, p, run_dir):
                changed = changed_inputs(old, "source")
                if changed:
                    (echo or _stderr)(f"{p.label}: {changed[0]}; running the point again")
                    break
        if kept is not None:
            rows[p.index] = _ok(run_dir, key, kept.pop("point_wall_s"), kept, reused=True)
            continue
        memo_path = None
        if cfg.sim.mode == "wormhole" and cfg.sim.wormhole.memo_mode != "off":
            if spec.memo == "private":
                (out / "memo").mkdir(exist_ok=True)
                memo_path = str((out / "memo" / f"{key}.sqlite").resolve())
            else:
                shared_store = resolve_store_path(cfg.sim.wormhole.memo_path)
        tasks.append(
            PointTask(p.index, key, cfg.model_dump(mode="json"), str(run_dir), memo_path, alone)
        )
    reused = sum(1 for r in rows.values() if r.get("reused"))
    if reused:
        (echo or _stderr)(f"{reused} of {len(points)} points already ran in {out}; kept")
    save = lambda: _save(out, _table(spec, points, rows))  # noqa: E731
    store = None
    if executor == "ray" and shared_store is not None and spec.memo == "shared":
        store = MemoStore(shared_store)

    def keep_store(task: PointTask, data: bytes) -> None:
        """A Ray task's store: merged into the shared one, or kept as the point's own."""
        if store is None:
            if task.memo_path is not None:
                atomic_write(Path(task.memo_path), lambda tmp: tmp.write_bytes(data))
            return
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "worker.sqlite"
            path.write_bytes(data)
            store.merge(path)

    runner = _local(tasks, jobs) if executor == "local" else _ray(tasks, jobs, address, store)
    by_index = {t.index: t for t in tasks}
    with task_progress("sweep", len(tasks), "points", mute_inner=True) as bar:
        done = failed = 0
        try:
            for running, outcome in runner:
                task = by_index[outcome.index]
                run_dir = Path(task.run_dir)
                if outcome.store is not None:
                    keep_store(task, outcome.store)
                if outcome.status == "ok":
                    if outcome.run_tar is not None:
                        _untar(outcome.run_tar, run_dir)
                    _record_wall(run_dir, outcome.wall_s)
                    rows[outcome.index] = _ok(run_dir, outcome.key, outcome.wall_s, outcome.row)
                else:
                    why = outcome.error or ""
                    rows[outcome.index] = _failed(out, outcome.index, outcome.key, why)
                    rows[outcome.index]["point_wall_s"] = outcome.wall_s
                done, failed = done + 1, failed + (outcome.status != "ok")
                (echo or bar.write)(_point_line(labels[outcome.index], outcome))
                bar.update(done, running=f"{running()} running", failed=f"{failed} failed")
                _copy_twins(rows, twins)
                save()
        except KeyboardInterrupt:
            save()
            kept = sum(1 for r in rows.values() if r.get("status") == "ok")
            raise SweepInterrupted(
                f"interrupted: {kept} of {len(points)} points are complete in {out} and were kept "
                f"({len(points) - len(rows)} not run); rerun the same command to run the rest"
            ) from None
        finally:
            if store is not None:
                store.close()
    _copy_twins(rows, twins)
    table = _table(spec, points, rows)
    _save(out, table)
    _plots(out, table, spec.axes)
    return table


def _copy_twins(rows: dict[int, dict[str, Any]], twins: dict[Path, list[int]]) -> None:
    """Points listed twice share the row of the one that ran."""
    for run_dir, copies in twins.items():
        rel = str(Path(run_dir.parent.name) / run_dir.name)
        src = next((r for r in rows.values() if r.get("run_dir") == rel), None)
        for index in copies:
            if src is not None:
                rows[index] = {**src, "reused": True}


def _ok(
    run_dir: Path, key: str, wall_s: float, figures: dict[str, Any], reused: bool = False
) -> dict[str, Any]:
    return {"status": "ok", "reused": reused, "error": None,
            "run_dir": str(Path(run_dir.parent.name) / run_dir.name), "key": key,
            "point_wall_s": wall_s, **figures}  # fmt: skip


def _failed(out: Path, index: int, key: str, error: str) -> dict[str, Any]:
    (out / "failed").mkdir(exist_ok=True)
    write_text(out / "failed" / f"{index:04d}-{key}.txt", error)
    last = error.strip().splitlines()[-1].strip() if error.strip() else "unknown error"
    return {"status": "failed", "reused": False, "error": last, "run_dir": None, "key": key}


def _save(out: Path, table: pl.DataFrame) -> None:
    write_parquet(out / "sweep.parquet", table)
    write_text(out / "sweep.csv", table.write_csv())


def _spec_yaml(spec: SweepSpec, base_dir: Path) -> str:
    import yaml

    data = spec.model_dump(mode="json")
    if isinstance(spec.experiment, str):
        data["experiment"] = str((base_dir / spec.experiment).resolve())
    return yaml.safe_dump(data, sort_keys=False)


def _plots(out: Path, table: pl.DataFrame, axes: list[str]) -> None:
    from wormsim.analysis.plots import plot_sweep_axis, plot_sweep_points

    (out / "plots").mkdir(exist_ok=True)
    plot_sweep_points(table, out / "plots" / "iteration_time_by_point.png")
    for axis in axes:
        name = axis.replace(".", "_")
        plot_sweep_axis(table, axis, out / "plots" / f"iteration_time_by_{name}.png", axes)
