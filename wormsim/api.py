"""The Python API: run an experiment from a notebook or a script and get its tables back.

>>> import wormsim
>>> run = wormsim.run("examples/default.yaml", mode="flow")  # doctest: +SKIP
>>> run.iteration_time_s  # doctest: +SKIP
0.0471...
>>> run.breakdown  # polars frames, units in the column names  # doctest: +SKIP
>>> run.report("runs/default-report")  # doctest: +SKIP
>>> run.plot.timeline()  # a matplotlib Figure (the report's PNG)  # doctest: +SKIP
>>> same = wormsim.load("runs/default")  # a run directory the CLI made  # doctest: +SKIP
>>> wormsim.compare(flow_run, packet_run)  # as `wormsim analysis compare`  # doctest: +SKIP

:func:`run` is what ``wormsim pipeline run`` does (the same stages, the same numbers): without
``out`` it works in a temporary directory that is removed afterwards, so nothing is left on disk
and every table lives in memory; with ``out`` the run directory stays, report included.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wormsim.analysis import plots as _plots
from wormsim.analysis.comparison import Comparison
from wormsim.analysis.report import Report, write_report
from wormsim.experiment import ExperimentConfig
from wormsim.humanize import human_time
from wormsim.pipelines.orchestrator import Experiment, override_items, run_pipeline
from wormsim.units import PS_PER_S_F

__all__ = ["Run", "Plots", "Comparison", "run", "load", "compare", "sweep"]

_TABLES = ("breakdown", "ranks", "collectives", "flows", "flow_stats", "links")


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

    @property
    def plot(self) -> Plots:
        """The report's plots as matplotlib figures: ``run.plot.timeline()`` and so on."""
        return Plots(self._report)

    def to_pandas(self, table: str = "breakdown") -> Any:
        """One report table (``breakdown``, ``ranks``, ``collectives``, ``flows``,
        ``flow_stats``, ``links``) as a pandas DataFrame."""
        if table not in _TABLES:
            raise ValueError(f"table must be one of {', '.join(_TABLES)}, not {table!r}")
        return getattr(self, table).to_pandas()

    def headline(self) -> dict[str, str]:
        """The summary a person reads first, as text: experiment, mode, iteration time, ranks,
        collectives, flows, wall time and the slowest rank."""
        h = self._report.headline()
        return {
            "experiment": str(h["experiment"]),
            "mode": self.mode,
            "iteration time": human_time(self.iteration_time_s * PS_PER_S_F, 4),
            "ranks": f"{h['ranks_count']:,}",
            "collectives": f"{h['collectives_count']:,}",
            "flows": f"{h['flows_count']:,}",
            "simulation wall time": f"{h['sim_wall_s']:.2f} s",
            "slowest rank": self.slowest_rank,
        }

    def __repr__(self) -> str:
        h = self._report.headline()
        where = f", run_dir='{self.run_dir}'" if self.run_dir is not None else ""
        return (
            f"Run({h['experiment']!r}, mode={self.mode!r}, "
            f"iteration_time={human_time(self.iteration_time_s * PS_PER_S_F, 4)}, "
            f"ranks={h['ranks_count']}{where})"
        )

    def _repr_markdown_(self) -> str:
        rows = "\n".join(f"| {k} | {v} |" for k, v in self.headline().items())
        return f"**wormsim run**\n\n| | |\n|---|---|\n{rows}\n"

    def _repr_html_(self) -> str:
        from html import escape

        rows = "".join(
            f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>"
            f"{escape(v)}</td></tr>"
            for k, v in self.headline().items()
        )
        return f"<b>wormsim run</b><table>{rows}</table>"


class Plots:
    """The figures of a run's report, each a :class:`matplotlib.figure.Figure` (the report's
    PNGs are drawn by the same functions of :mod:`wormsim.analysis.plots`)."""

    def __init__(self, report: Report) -> None:
        self._r = report

    def timeline(self, max_ranks: int = 32) -> Any:
        """Per-rank compute and communication lanes over the iteration."""
        return _plots.plot_timeline(
            self._r.intervals, max_ranks=max_ranks, iteration_ps=self._r.run.iteration_ps
        )

    def fct_cdf(self) -> Any:
        """CDF of the flow slowdown (FCT / ideal FCT) per traffic class."""
        return _plots.plot_fct_cdf(self._r.flows)

    def link_utilisation(self) -> Any:
        """Link utilisation per fabric tier."""
        return _plots.plot_link_utilisation(self._r.links)

    def busbw(self) -> Any:
        """Bus bandwidth of every collective."""
        return _plots.plot_busbw(self._r.collectives)


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


def load(run_dir: Path | str) -> Run:
    """Open a run directory made by ``wormsim pipeline run`` (or :func:`run` with ``out``).

    The tables are computed from the run's outputs as the report computes them; the
    collectives' "alone" slowdowns come from ``report/collectives.parquet`` when the run has a
    report.

    Raises
    ------
    WormsimError
        Not a complete run directory (the message names the missing file and the command).
    """
    from wormsim.analysis.report import analyse
    from wormsim.analysis.run_data import load_run
    from wormsim.experiment import load_run_config
    from wormsim.rundir import read_parquet

    path = Path(run_dir)
    cfg = load_run_config(path)
    rep = analyse(load_run(path))
    saved = path / "report" / "collectives.parquet"
    if saved.is_file():
        rep = dataclasses.replace(rep, collectives=read_parquet(saved, "wormsim analysis report"))
    return Run(cfg, rep.run.summary, path, rep)


def compare(a: Run | Path | str, b: Run | Path | str) -> Comparison:
    """Compare run ``a`` against the reference ``b`` (a run, a run directory, or an HPCC ns-3
    ``fct.txt``): the figures of ``wormsim analysis compare --json`` as a
    :class:`~wormsim.analysis.comparison.Comparison` (a mapping with a short ``repr``, an HTML
    table, ``to_pandas()``; ``sim_speedup_x`` uses the engine's wall time only,
    ``e2e_speedup_x`` every stage's)."""
    from wormsim.analysis.compare import compare_runs

    def where(x: Run | Path | str) -> Path:
        if isinstance(x, Run):
            if x.run_dir is None:
                raise ValueError("compare needs runs kept on disk: wormsim.run(..., out=DIR)")
            return x.run_dir
        return Path(x)

    return Comparison(compare_runs(where(a), where(b)))


def sweep(
    sweep_file: Path | str | Mapping[str, Any],
    out: Path | str,
    executor: str = "local",
    address: str | None = None,
    jobs: int | None = None,
    *,
    alone: bool = False,
) -> pl.DataFrame:
    """Run every point of a sweep into ``out`` (resuming an earlier run there) and return the
    sweep table, one row per point (:func:`wormsim.pipelines.sweep.run_sweep`).

    ``sweep_file`` is a sweep file or its contents as a dict, e.g. ``{"name": "cc",
    "experiment": "examples/default.yaml", "grid": {"network.cc": ["hpcc", "dcqcn"]}}`` (paths
    relative to the working directory).
    """
    from wormsim.pipelines.sweep import run_sweep

    spec = sweep_file if isinstance(sweep_file, Mapping) else Path(sweep_file)
    return run_sweep(spec, Path(out), executor, address, jobs, alone=alone)  # type: ignore[arg-type]
