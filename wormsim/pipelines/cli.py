"""``wormsim pipeline …``: the experiment schema and whole-pipeline runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

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
    set_: Annotated[list[str] | None, typer.Option("--set", help="key.path=value")] = None,
) -> None:
    """Check an experiment file and print it resolved (every default filled in)."""
    from wormsim.clikit import user_errors
    from wormsim.experiment import dump_yaml, load_experiment

    with user_errors():
        cfg = load_experiment(experiment, set_ or [])
    typer.echo(dump_yaml(cfg))


@app.command()
def run(
    experiment: Annotated[Path, typer.Argument(help="Experiment file (.yaml, .toml, .json).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Run directory to create.")],
    mode: Annotated[
        Literal["packet", "wormhole", "flow"] | None,
        typer.Option("--mode", help="Engine (default: the experiment's sim.mode)."),
    ] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="key.path=value")] = None,
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
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
