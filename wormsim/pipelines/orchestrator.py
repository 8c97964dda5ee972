"""The orchestrator: one experiment through workload -> collective -> netsim -> analysis.

It only chains the stages' run-directory steps (:func:`wormsim.workload.stage.stage_workload`,
:func:`wormsim.collective.stage.stage_collective`,
:func:`wormsim.netsim.stage.simulate_run_dir`, :func:`wormsim.analysis.report.analyse` and
:func:`~wormsim.analysis.report.write_report`) inside a staged run directory. Only the two
entry points import it: the ``pipeline`` command and the Python API (:mod:`wormsim.api`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from wormsim.analysis.report import Report, alone_runner, analyse, write_report
from wormsim.analysis.run_data import load_run
from wormsim.clikit import notice
from wormsim.collective.stage import stage_collective
from wormsim.experiment import (
    ExperimentConfig,
    apply_overrides,
    import_workload,
    init_run_dir,
    load_experiment,
    parse_experiment,
    workload_format,
)
from wormsim.netsim.stage import simulate_run_dir
from wormsim.progress import expected
from wormsim.rundir import staged_run_dir, write_json
from wormsim.units import BYTES_PER_GB_F
from wormsim.workload.scale import (
    available_memory,
    check_memory,
    estimate_scale,
    estimate_seconds,
)
from wormsim.workload.source import compute_origin
from wormsim.workload.stage import stage_import, stage_workload

__all__ = ["PipelineRun", "Experiment", "resolve_experiment", "override_items", "run_pipeline"]

#: What an experiment may be given as: a file, a mapping of sections, or a validated config.
Experiment = Path | str | Mapping[str, Any] | ExperimentConfig


class PipelineRun(NamedTuple):
    """What :func:`run_pipeline` ran and found."""

    #: The resolved experiment (``experiment.yaml`` of the run).
    cfg: ExperimentConfig
    #: ``summary.json`` of the run.
    summary: dict[str, Any]
    #: Where the iteration's time goes (:func:`~wormsim.analysis.breakdown.iteration_breakdown`).
    breakdown: pl.DataFrame
    #: Every table of the report (:func:`~wormsim.analysis.report.analyse`).
    report: Report


def override_items(overrides: Mapping[str, Any] | Sequence[str]) -> list[str]:
    """``{"parallel.tp": 4}`` (or already ``["parallel.tp=4"]``) as ``key.path=value`` items."""
    if isinstance(overrides, Mapping):
        return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in overrides.items()]
    return [str(item) for item in overrides]


def resolve_experiment(experiment: Experiment, overrides: Sequence[str] = ()) -> ExperimentConfig:
    """The validated experiment with ``key.path=value`` overrides applied.

    Raises
    ------
    ConfigError
        A bad file, section or field (the message names it and the fix).
    """
    if isinstance(experiment, ExperimentConfig):
        if not overrides:
            return experiment
        experiment = experiment.model_dump(mode="json")
    if isinstance(experiment, Mapping):
        return parse_experiment(apply_overrides(dict(experiment), list(overrides)))
    return load_experiment(Path(experiment), list(overrides))


#: A run estimated to need at least this much memory says so before it starts.
_SHOW_MEMORY_BYTES = 2**30


def _check_memory(cfg: ExperimentConfig) -> dict[str, float]:
    """Estimate the run's peak memory; refuse it if it cannot fit (before anything is written),
    say the estimate if it is large. Returns the stages' expected seconds (the progress
    display's time left)."""
    c = cfg.cluster
    scale = estimate_scale(
        cfg.model, cfg.parallel, cfg.hardware, c.gpus, c.gpus_per_node, cfg.collective,
        c.host_link_gbps,
    )  # fmt: skip
    engine = None
    if cfg.sim.mode != "flow":
        from wormsim.netsim.packet.run import engine_bytes

        wormhole = cfg.sim.wormhole if cfg.sim.mode == "wormhole" else None
        engine = engine_bytes(cfg.network, wormhole)
    est = check_memory(scale, cfg.sim.mode, engine)
    if est.peak_bytes >= _SHOW_MEMORY_BYTES:
        avail, source = available_memory()
        seen = (
            f"; {avail / BYTES_PER_GB_F:.1f} GB available ({source})" if avail is not None else ""
        )
        notice(f"memory: {est.describe()}{seen}")
    return estimate_seconds(scale)


def run_pipeline(
    experiment: Experiment,
    out: Path,
    mode: str | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
    *,
    alone: bool = True,
    workload: Path | None = None,
    monitor_period_ns: int = 0,
    inputs: Mapping[str, Path] | None = None,
) -> PipelineRun:
    """Run every stage of an experiment into the new run directory ``out``, report included.

    Parameters
    ----------
    experiment : Path, mapping or ExperimentConfig
        The experiment file (.yaml, .yml, .toml or .json), its sections as a mapping, or a
        validated config.
    out : Path
        The run directory to create: it appears only when every stage succeeded.
    mode : {"packet", "wormhole", "flow"}, optional
        The engine; applied (and recorded) as the last override ``sim.mode=MODE``. Default: the
        experiment's ``sim.mode``.
    overrides : sequence of str
        ``key.path=value`` items applied to the experiment.
    force : bool
        Replace an existing run directory whole.
    alone : bool
        Replay every distinct collective alone on an idle fabric for the report's slowdowns
        (:func:`~wormsim.analysis.collectives.alone_durations`).
    workload : Path, optional
        A SimAI/AICB workload ``.txt`` or the prefix of Chakra traces (told apart by
        :func:`~wormsim.experiment.aicb.workload_format`) whose ops the run simulates instead of
        building them from the model; ``experiment`` then gives the other sections (``{}``:
        all defaults) and its model and parallel sections are replaced
        (:func:`~wormsim.experiment.aicb.import_workload`).
    monitor_period_ns : int
        Sample flow rates and switch queues at this period (packet mode; 0 = off).
    inputs : mapping, optional
        Input files the experiment holds by value (``{"network": SimAI.conf}``), copied into
        the run directory with the files it names (:mod:`wormsim.experiment.inputs`).

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
    ops = None
    if workload is None:
        cfg = resolve_experiment(experiment, overrides)
        if cfg.workload is not None:  # an experiment that names its workload file
            fmt = cfg.workload.format
            workload = Path(cfg.workload.file)
            ops, cfg = import_workload(workload, fmt, cfg.model_dump(mode="json"))
    else:
        if isinstance(experiment, ExperimentConfig):
            experiment = experiment.model_dump(mode="json")
        fmt = workload_format(workload)
        ops, cfg = import_workload(workload, fmt, experiment, overrides)
    if cfg.sim.mode != "packet":
        monitor_period_ns = 0
    expect: dict[str, float] = {}
    if ops is None:  # a workload built from the model: refused here if it cannot fit
        expect = _check_memory(cfg)
    origin = compute_origin(cfg.workload, cfg.model, cfg.hardware)
    notice(origin.get("warning"))
    with staged_run_dir(out, force) as stage_dir, expected(expect):
        init_run_dir(cfg, stage_dir, overrides, extra_inputs=dict(inputs or {}))
        if ops is None:
            stage_workload(cfg, stage_dir)
        else:
            stage_import(stage_dir, ops, {"format": fmt, "path": str(workload)}, overrides)
        # the DAG goes to netsim as built, not read back, and is dropped before the analysis
        dag = stage_collective(stage_dir, cfg)
        summary = simulate_run_dir(stage_dir, cfg, cfg.sim.mode, monitor_period_ns, dag=dag)
        del dag
        summary["compute"] = origin
        write_json(stage_dir / "summary.json", summary)
        report = analyse(load_run(stage_dir), alone_runner(cfg, cfg.sim.mode) if alone else None)
        write_report(report)
    report = dataclasses.replace(report, run=dataclasses.replace(report.run, run_dir=Path(out)))
    return PipelineRun(cfg, summary, report.breakdown, report)
