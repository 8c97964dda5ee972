"""``wormsim analysis …``: reports over run directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(help="Reports over run directories.", no_args_is_help=True)


@app.callback()
def _main() -> None:
    """Reports over run directories."""


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="Run to assess (e.g. flow or wormhole mode).")],
    run_b: Annotated[Path, typer.Argument(help="Reference run (e.g. packet mode).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Also write JSON here.")] = None,
) -> None:
    """Per-flow FCT error (mean, p50, p99, max), iteration-time error and wall-time ratio."""
    from wormsim.analysis.compare import compare_runs
    from wormsim.analysis.tables import mapping_table, print_tables
    from wormsim.clikit import user_errors
    from wormsim.rundir import write_json

    with user_errors():
        result = compare_runs(run_a, run_b)
        if out is not None:
            write_json(out, result)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        print_tables(mapping_table(result, title=f"{run_a} against {run_b}"))


@app.command()
def breakdown(run_dir: Annotated[Path, typer.Argument(help="Run directory.")]) -> None:
    """Where the iteration's time goes: compute, exposed communication per group, idle."""
    from wormsim.analysis.breakdown import iteration_breakdown
    from wormsim.analysis.tables import frame_table, print_tables
    from wormsim.clikit import user_errors
    from wormsim.netsim.stage import read_node_times
    from wormsim.workload.stage import read_ops

    with user_errors():
        start, finish = read_node_times(run_dir)
        table = iteration_breakdown(read_ops(run_dir), start, finish)
    print_tables(frame_table(table, title="Where the time goes"))
