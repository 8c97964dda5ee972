"""The Python API: run an experiment from a notebook or a script and get its tables back.

>>> import wormsim
>>> run = wormsim.run("examples/default.yaml", mode="flow")  # doctest: +SKIP
>>> run.iteration_time_s  # doctest: +SKIP
0.0471...
>>> run.breakdown  # polars frames, units in the column names  # doctest: +SKIP
>>> run.report("runs/default-report")  # doctest: +SKIP

:func:`run` is what ``wormsim pipeline run`` does (the same stages, the same numbers): without
``out`` it works in a temporary directory that is removed afterwards, so nothing is left on disk
and every table lives in memory; with ``out`` the run directory stays, report included.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wormsim.analysis.report import Report, write_report
from wormsim.experiment import ExperimentConfig
from wormsim.pipelines.orchestrator import Experiment, override_items, run_pipeline

__all__ = ["Run", "run", "sweep"]


@dataclass(frozen=True)
class Run:
    """One simulated iteration: its summary and every report table, as polars frames.

    Column names carry their units (``_us``, ``_ps``, ``_bytes``, ``_pct``, ``_GBps``, ``_x``;
    see :mod:`wormsim.analysis.units`).

    Attributes
    ----------
    config : ExperimentConfig
        The resolved experiment.
    summary : dict
        ``summary.json``: the iteration time, the mode and the engine counters.
    run_dir : Path or None
        Where the run directory is (``None`` when it was temporary).
    """

    config: ExperimentConfig
    summary: dict[str, Any]
    run_dir: Path | None
    _report: Report

    @property
    def iteration_time_s(self) -> float:
        """Simulated time of one iteration (s)."""
        return float(self.summary["iteration_time_s"])

    @property
    def mode(self) -> str:
        """The engine that ran."""
        return str(self.summary["mode"])

    @property
    def breakdown(self) -> pl.DataFrame:
        """Where the time goes: critical rank, mean rank, critical path (µs and %)."""
        return self._report.breakdown

    @property
    def ranks(self) -> pl.DataFrame:
        """The breakdown of every rank (µs), with its pipeline stage."""
        return self._report.ranks

    @property
    def collectives(self) -> pl.DataFrame:
        """One row per collective instance: kind, group, ranks, bytes, times, algbw, busbw,
        slowdown against the same collective alone on an idle fabric."""
        return self._report.collectives

    @property
    def flows(self) -> pl.DataFrame:
        """Every flow: endpoints, bytes, start/finish/FCT (ps), tier, ideal FCT, slowdown."""
        return self._report.flows

    @property
    def flow_stats(self) -> pl.DataFrame:
        """FCT and slowdown percentiles by traffic class, fabric tier and collective."""
        return self._report.flow_stats

    @property
    def links(self) -> pl.DataFrame:
        """Every directed port: tier, rate, payload, utilisation, queue, PFC, ECN."""
        return self._report.links

    @property
    def slowest_rank(self) -> str:
        """Which rank finishes last, and why."""
        return self._report.slowest

    def report(self, path: Path | str) -> Path:
        """Write the full report (``report.md``, tables, plots, ``trace.json``,
        ``EndToEnd.csv``) into the directory ``path``; returns it."""
        return write_report(self._report, Path(path))


def run(
    experiment: Experiment,
    mode: str | None = None,
    overrides: Mapping[str, Any] | Sequence[str] | None = None,
    out: Path | str | None = None,
    *,
    force: bool = False,
    alone: bool = True,
) -> Run:
    """Simulate one iteration of an experiment.

    Parameters
    ----------
    experiment : path, mapping or ExperimentConfig
        An experiment file (.yaml, .toml, .json), its sections as a dict, or a validated config.
    mode : {"packet", "wormhole", "flow"}, optional
        The engine (default: the experiment's ``sim.mode``).
    overrides : mapping or sequence, optional
        ``{"parallel.tp": 4, "network.cc": "dcqcn"}`` or ``["parallel.tp=4"]``, as ``--set``.
    out : path, optional
        Keep the run directory here (with ``report/``); default: a temporary one, removed.
    force : bool
        Replace an existing ``out``.
    alone : bool
        Replay each distinct collective alone on an idle fabric for the slowdown column.

    Returns
    -------
    Run

    Raises
    ------
    WormsimError
        Bad input (the message names the field or file and the fix).
    """
    items = override_items(overrides or [])
    if out is not None:
        res = run_pipeline(experiment, Path(out), mode, items, force, alone=alone)
        return Run(res.cfg, res.summary, Path(out), res.report)
    with tempfile.TemporaryDirectory(prefix="wormsim-run-") as tmp:
        res = run_pipeline(experiment, Path(tmp) / "run", mode, items, alone=alone)
    return Run(res.cfg, res.summary, None, res.report)


def sweep(
    sweep_file: Path | str,
    out: Path | str,
    executor: str = "local",
    address: str | None = None,
    jobs: int | None = None,
    *,
    alone: bool = False,
) -> pl.DataFrame:
    """Run every point of a sweep file into ``out`` (resuming an earlier run there) and return
    the sweep table, one row per point (:func:`wormsim.pipelines.sweep.run_sweep`)."""
    from wormsim.pipelines.sweep import run_sweep

    return run_sweep(Path(sweep_file), Path(out), executor, address, jobs, alone=alone)  # type: ignore[arg-type]
