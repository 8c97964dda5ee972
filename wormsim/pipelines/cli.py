"""``wormsim pipeline …``: the experiment schema and whole-pipeline runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from wormsim.clikit import JsonOpt, SetOpt

__all__ = ["app"]

app = typer.Typer(help="Experiments: schema, and running all stages.", no_args_is_help=True)


@app.command()
def schema() -> None:
    """Print the JSON schema of an experiment file."""
    from wormsim.experiment import ExperimentConfig

    typer.echo(json.dumps(ExperimentConfig.model_json_schema(), indent=2))


@app.command()
def validate(
    experiment: Annotated[Path, typer.Argument(help="Experiment file.")],
    set_: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check an experiment file and print it resolved (every default filled in)."""
    from wormsim.clikit import user_errors
    from wormsim.experiment import dump_yaml, load_experiment

    with user_errors():
        cfg = load_experiment(experiment, set_ or [])
    typer.echo(json.dumps(cfg.model_dump(mode="json"), indent=2) if as_json else dump_yaml(cfg))


@app.command()
def run(
    experiment: Annotated[Path, typer.Argument(help="Experiment file (.yaml, .toml, .json).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Run directory to create.")],
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
) -> None:
    """Run workload -> collective -> netsim -> report; print the iteration time, where it goes
    and the slowest rank. The report is RUN/report/report.md.

    The run directory appears only when every stage succeeded; an existing one is refused
    unless --force.
    """
    from wormsim.analysis.cli import echo_report
    from wormsim.clikit import user_errors
    from wormsim.pipelines.orchestrator import run_pipeline

    with user_errors():
        res = run_pipeline(experiment, out, mode, set_ or [], force, alone=alone)
    echo_report(res.report, out / "report", as_json)


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
) -> None:
    """Run every point of a sweep (a base experiment and grid/zip/variant axes) and write
    SWEEP_DIR/sweep.parquet with one row per point, each point's run directory and plots.

    Finished points of an earlier run into the same directory are kept; failed points are
    recorded and retried on a rerun; Ctrl-C keeps what finished.
    """
    from wormsim.clikit import EXIT_INTERRUPTED, EXIT_SOME_FAILED, fail, user_errors
    from wormsim.pipelines.sweep import SweepInterrupted, run_sweep

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
