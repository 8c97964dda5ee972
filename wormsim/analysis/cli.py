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
    run_b: Annotated[
        Path,
        typer.Argument(
            metavar="REF",
            help="Reference: a run directory (e.g. packet mode) or an HPCC ns-3 fct.txt file.",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Also write JSON here.")] = None,
) -> None:
    """Per-flow FCT error (mean, p50, p99, max, in %), iteration-time error, wall-time ratio,
    and the configuration paths whose values differ between the two runs."""
    import polars as pl

    from wormsim.analysis.compare import compare_runs
    from wormsim.analysis.tables import frame_table, mapping_table, print_tables
    from wormsim.clikit import user_errors
    from wormsim.rundir import write_json

    with user_errors():
        result = compare_runs(run_a, run_b)
        if out is not None:
            write_json(out, result)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    config = ("config_source", "config_note", "config_diff")
    figures = {k: v for k, v in result.items() if k not in config}
    tables = [mapping_table(figures, title=f"{run_a} against {run_b}")]
    diff = result["config_diff"]
    if diff:
        rows = pl.DataFrame(
            {
                "key": [d["key"] for d in diff],
                "a": [json.dumps(d["a"]) if not isinstance(d["a"], str) else d["a"] for d in diff],
                "b": [json.dumps(d["b"]) if not isinstance(d["b"], str) else d["b"] for d in diff],
            }
        )
        tables.append(
            frame_table(rows, title=f"Configuration differences ({result['config_source']})")
        )
    print_tables(*tables)
    if not diff:
        typer.echo(
            result["config_note"]
            or f"the two runs' {result['config_source']} settings are identical"
        )


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
