"""``wormsim pipeline …``: the experiment schema and whole-pipeline runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from wormsim.clikit import JsonOpt, QuietOpt, SetOpt

__all__ = ["app"]

app = typer.Typer(help="Experiments: schema, and running all stages.", no_args_is_help=True)


@app.command()
def schema() -> None:
    """Print the JSON schema of an experiment file."""
    from wormsim.experiment import ExperimentConfig

    typer.echo(json.dumps(ExperimentConfig.model_json_schema(), indent=2))


@app.command()
def validate(
    experiment: Annotated[Path, typer.Argument(metavar="EXPERIMENT", help="Experiment file.")],
    set_: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check an experiment file and print it resolved (every default filled in)."""
    from wormsim.clikit import user_errors
    from wormsim.experiment import dump_yaml, load_experiment

    with user_errors():
        cfg = load_experiment(experiment, set_ or [])
    typer.echo(json.dumps(cfg.model_dump(mode="json"), indent=2) if as_json else dump_yaml(cfg))


def _quiet(quiet: bool) -> None:
    """``-q`` after the command does what ``wormsim -q`` before it does."""
    if quiet:
        from wormsim import progress

        progress.set_enabled(False)


def _file_overrides(topology: Path | None, config: Path | None) -> list[str]:
    """``--topology`` and ``--config`` as overrides (recorded in the manifest with the rest)."""
    items = []
    if topology is not None:
        items.append(f"cluster.topology_file={json.dumps(str(topology.resolve()))}")
    if config is not None:
        items.append(f"network={json.dumps(str(config.resolve()))}")
    return items


@app.command()
def run(
    out: Annotated[Path, typer.Option("-o", "--out", help="Run directory to create.")],
    experiment: Annotated[
        Path | None,
        typer.Argument(
            metavar="EXPERIMENT",
            help="Experiment file (.yaml, .toml, .json); optional with --workload (then every "
            "section not given by the workload, --topology or --config takes its default).",
        ),
    ] = None,
    workload: Annotated[
        Path | None,
        typer.Option(
            "--workload",
            "-w",
            help="SimAI/AICB workload .txt, or the prefix of Chakra traces PREFIX.<rank>.et, to "
            "simulate instead of the experiment's model.",
        ),
    ] = None,
    topology: Annotated[
        Path | None,
        typer.Option(
            "--topology",
            "-n",
            help="HPCC topology.txt or SimAI topology file (sets cluster.topology_file); the "
            "workload runs on its first GPUs, server by server.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="SimAI.conf or HPCC config.txt as the network section; its queue and rate "
            "monitors are sampled in packet mode.",
        ),
    ] = None,
    mode: Annotated[
        Literal["packet", "wormhole", "flow"] | None,
        typer.Option("--mode", help="Engine (default: the experiment's sim.mode)."),
    ] = None,
    set_: SetOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing run directory whole.")
    ] = False,
    alone: Annotated[
        bool,
        typer.Option(
            "--alone/--no-alone",
            help="Replay each distinct collective alone on an idle fabric for the report's "
            "slowdowns.",
        ),
    ] = True,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run workload -> collective -> netsim -> report; print the iteration time, where it goes
    and the slowest rank. The report is RUN/report/report.md.

    A SimAI run is one command: --workload W.txt --topology T --config SimAI.conf -o RUN;
    an ASTRA-sim trace runs with --workload PREFIX (its PREFIX.<rank>.et files).
    The run directory appears only when every stage succeeded; an existing one is refused
    unless --force.
    """
    from wormsim.analysis.cli import echo_report
    from wormsim.clikit import creates, fail, notice, user_errors
    from wormsim.pipelines.orchestrator import run_pipeline

    _quiet(quiet)
    creates(out)
    if experiment is None and workload is None:
        fail("give an experiment file, or a workload with --workload W.txt")
    with user_errors():
        monitor_ns = 0
        if config is not None:
            from wormsim.netsim.formats.simai_config import read_simai_config

            monitor_ns = read_simai_config(config).monitor_period_ns
        overrides = [*(set_ or []), *_file_overrides(topology, config)]
        res = run_pipeline(
            {} if experiment is None else experiment, out, mode, overrides, force,
            alone=alone, workload=workload, monitor_period_ns=monitor_ns,
            inputs={} if config is None else {"network": config.resolve()},
        )  # fmt: skip
    echo_report(res.report, out / "report", as_json)
    notice(res.summary.get("compute", {}).get("warning"))  # again, after the figures


@app.command()
def sweep(
    sweep_file: Annotated[Path, typer.Argument(metavar="SWEEP", help="Sweep file (.yaml).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Sweep directory (resumed if there).")],
    executor: Annotated[
        Literal["local", "ray"],
        typer.Option("--executor", help="local: a process pool; ray: a Ray cluster."),
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option("--address", help="Ray cluster address (default: a local Ray instance)."),
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", help="Points at once (default: CPUs).")
    ] = None,
    alone: Annotated[
        bool,
        typer.Option(
            "--alone/--no-alone", help="Replay each point's collectives alone for its report."
        ),
    ] = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run every point of a sweep (a base experiment and grid/zip/variant axes) and write
    SWEEP_DIR/sweep.parquet with one row per point, each point's run directory and plots.

    Finished points of an earlier run into the same directory are kept; failed points are
    recorded and retried on a rerun; Ctrl-C keeps what finished.
    """
    from wormsim.clikit import EXIT_INTERRUPTED, EXIT_SOME_FAILED, fail, user_errors
    from wormsim.pipelines.sweep import SweepInterrupted, run_sweep

    _quiet(quiet)
    with user_errors():
        try:
            table = run_sweep(sweep_file, out, executor, address, jobs, alone=alone)
        except SweepInterrupted as exc:
            fail(str(exc), EXIT_INTERRUPTED)
    failed = table.filter(table["status"] == "failed")
    if as_json:
        typer.echo(json.dumps(table.to_dicts(), indent=2, default=str))
    else:
        _show_sweep(table, out)
    if failed.height:
        raise typer.Exit(EXIT_SOME_FAILED)


def _show_sweep(table, out: Path) -> None:
    """The sweep table on the console, and one line per failed point."""
    from wormsim.analysis.tables import frame_table, print_tables

    shown = [
        c
        for c in (
            "point",
            "label",
            "status",
            "iteration_time_ms",
            "point_wall_s",
            "memo_hits_count",
        )  # fmt: skip
        if c in table.columns
    ]
    print_tables(frame_table(table.select(shown), title=f"Sweep {out} (all columns: sweep.csv)"))
    failed = table.filter(table["status"] == "failed")
    for label, error in zip(failed["label"], failed["error"], strict=True):
        typer.echo(f"failed: {label}: {error}")
