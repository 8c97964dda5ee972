"""``wormsim analysis …``: reports over run directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wormsim.clikit import JsonOpt

if TYPE_CHECKING:
    from wormsim.analysis.report import Report

__all__ = ["app", "echo_report"]

app = typer.Typer(help="Reports over run directories.", no_args_is_help=True)


@app.callback()
def _main() -> None:
    """Reports over run directories."""


@app.command()
def compare(
    run_a: Annotated[
        Path, typer.Argument(metavar="RUN_A", help="Run to assess (e.g. flow or wormhole mode).")
    ],
    run_b: Annotated[
        Path,
        typer.Argument(
            metavar="RUN_B",
            help="Reference: a run directory (e.g. packet mode) or an HPCC ns-3 fct.txt file.",
        ),
    ],
    as_json: JsonOpt = False,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Also write JSON here.")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw the per-flow error histogram (PNG).")
    ] = None,
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
        if plot is not None:
            import numpy as np

            from wormsim.analysis.compare import flow_errors
            from wormsim.analysis.plots import plot_error_histogram

            errors = flow_errors(run_a, run_b)
            plot_error_histogram(
                100 * errors[np.isfinite(errors)], plot, title=f"{run_a} against {run_b}"
            )
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    config = ("config_source", "config_note", "config_diff", "inputs_diff")
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
    for line in result["inputs_diff"]:
        typer.echo(f"input: {line}")
    typer.echo(
        "speed-ups are wall B / wall A: sim = the simulation engine's wall time only, "
        "e2e = every stage end to end (workload, collective, netsim)"
    )
    if not diff:
        typer.echo(
            result["config_note"]
            or f"the two runs' {result['config_source']} settings are identical"
        )


@app.command()
def breakdown(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="Run directory.")],
    as_json: JsonOpt = False,
) -> None:
    """Where the iteration's time goes: compute, exposed communication per parallel dimension,
    pipeline bubble and idle on the critical rank, the mean rank and the critical path; and
    the slowest rank and why."""
    import polars as pl

    from wormsim.analysis.breakdown import (
        critical_path,
        iteration_breakdown,
        op_intervals,
        rank_breakdown_table,
        slowest_rank_reason,
    )
    from wormsim.analysis.tables import frame_table, print_tables
    from wormsim.clikit import user_errors
    from wormsim.collective.stage import read_dag
    from wormsim.netsim.stage import NODES_FILE
    from wormsim.rundir import read_table
    from wormsim.workload.stage import read_ops

    with user_errors():
        nodes = read_table(run_dir, NODES_FILE, "wormsim netsim run", ["start_ps", "finish_ps"])
        start, finish = nodes["start_ps"].to_numpy(), nodes["finish_ps"].to_numpy()
        ops, dag = read_ops(run_dir), read_dag(run_dir)
        path = critical_path(dag, nodes)
        table = iteration_breakdown(ops, start, finish, path)
        ranks = rank_breakdown_table(op_intervals(ops, start, finish), int(finish.max()))
        stage = dict(ops.group_by("rank").agg(pl.col("stage").first()).iter_rows())
        why = slowest_rank_reason(ranks, stage if len(set(stage.values())) > 1 else None)
    if as_json:
        typer.echo(json.dumps({"breakdown": table.to_dicts(), "slowest_rank": why}, indent=2))
        return
    print_tables(frame_table(table, title="Where the time goes"))
    typer.echo(f"slowest rank: {why}")


@app.command()
def report(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="Run directory of a finished pipeline run.")
    ],
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="Report directory (default RUN/report).")
    ] = None,
    alone: Annotated[
        bool,
        typer.Option(
            "--alone/--no-alone",
            help="Replay each distinct collective alone on an idle fabric for its slowdown.",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Write report.md with its tables (parquet and CSV), plots, trace.json and EndToEnd.csv."""
    from wormsim.analysis.report import alone_runner, analyse, write_report
    from wormsim.analysis.run_data import load_run
    from wormsim.clikit import notice, user_errors
    from wormsim.experiment import load_run_config

    with user_errors():
        run = load_run(run_dir)
        runner = None
        if alone:
            notice(f"replaying each distinct collective alone ({run.mode} mode)")
            runner = alone_runner(load_run_config(run_dir), run.mode)
        rep = analyse(run, runner)
        where = write_report(rep, out)
    echo_report(rep, where, as_json)


def echo_report(rep: Report, where: Path, as_json: bool) -> None:
    """Print a report's headline, breakdown and slowest rank (or them as JSON)."""
    from wormsim.analysis.tables import frame_table, mapping_table, print_tables

    head = {**rep.headline(), "report": str(where / "report.md")}
    if as_json:
        out = {**head, "breakdown": rep.breakdown.to_dicts(), "slowest_rank": rep.slowest}
        typer.echo(json.dumps(out, indent=2))
        return
    print_tables(
        mapping_table(head, title="Iteration"),
        frame_table(rep.breakdown, title="Where the time goes"),
    )
    typer.echo(f"slowest rank: {rep.slowest}")
