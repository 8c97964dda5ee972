"""The orchestrator: one experiment through workload -> collective -> netsim into a new run.

It only chains the stages' run-directory steps (:func:`wormsim.workload.stage.stage_workload`,
:func:`wormsim.collective.stage.stage_collective`,
:func:`wormsim.netsim.stage.simulate_run_dir`) inside a staged run directory, and reports where
the iteration's time went (:func:`wormsim.analysis.breakdown.iteration_breakdown`). Nothing but
the ``pipeline`` command imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from wormsim.analysis.breakdown import iteration_breakdown
from wormsim.collective.stage import stage_collective
from wormsim.experiment import ExperimentConfig, init_run_dir, load_experiment
from wormsim.netsim.stage import read_node_times, simulate_run_dir
from wormsim.rundir import staged_run_dir
from wormsim.workload.stage import stage_workload

__all__ = ["PipelineRun", "run_pipeline"]


class PipelineRun(NamedTuple):
    """What :func:`run_pipeline` ran and found."""

    #: The resolved experiment (``experiment.yaml`` of the run).
    cfg: ExperimentConfig
    #: ``summary.json`` of the run.
    summary: dict[str, Any]
    #: Where the iteration's time goes (:func:`~wormsim.analysis.breakdown.iteration_breakdown`).
    breakdown: pl.DataFrame


def run_pipeline(
    experiment: Path,
    out: Path,
    mode: str | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
) -> PipelineRun:
    """Run every stage of an experiment file into the new run directory ``out``.

    Parameters
    ----------
    experiment : Path
        The experiment file (.yaml, .yml, .toml or .json).
    out : Path
        The run directory to create: it appears only when every stage succeeded.
    mode : {"packet", "wormhole", "flow"}, optional
        The engine; applied (and recorded) as the last override ``sim.mode=MODE``. Default: the
        experiment's ``sim.mode``.
    overrides : sequence of str
        ``key.path=value`` items applied to the experiment file.
    force : bool
        Replace an existing run directory whole.

    Returns
    -------
    PipelineRun

    Raises
    ------
    WormsimError
        Bad input at any stage (nothing is left at ``out``).
    """
    overrides = list(overrides)
    if mode is not None:
        overrides.append(f"sim.mode={mode}")
    cfg = load_experiment(experiment, overrides)
    with staged_run_dir(out, force) as stage_dir:
        init_run_dir(cfg, stage_dir, overrides)
        ops = stage_workload(cfg, stage_dir)
        stage_collective(stage_dir, cfg)
        summary = simulate_run_dir(stage_dir, cfg, cfg.sim.mode)
        start, finish = read_node_times(stage_dir)
        breakdown = iteration_breakdown(ops, start, finish)
    return PipelineRun(cfg, summary, breakdown)
