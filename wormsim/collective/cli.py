"""``wormsim collective …``: expand a run's ops into the flow DAG, and show it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from wormsim.clikit import JsonOpt

__all__ = ["app"]

app = typer.Typer(
    help="Stage 2: communication ops -> flow DAG (NCCL-like algorithms).", no_args_is_help=True
)


@app.command()
def expand(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="Run directory with ops.parquet.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Write dag.parquet: flows and compute/delay nodes with their dependencies."""
    from wormsim.clikit import emit, user_errors
    from wormsim.collective.stage import stage_collective
    from wormsim.experiment import load_run_config

    with user_errors():
        dag = stage_collective(run_dir, load_run_config(run_dir))
    flows = int((dag["kind"] == "flow").sum())
    path = run_dir / "dag.parquet"
    result = {"dag_file": str(path), "nodes_count": dag.height, "flows_count": flows}
    emit(result, as_json, f"wrote {path} ({dag.height} nodes, {flows} flows)")


@app.command()
def show(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="Run directory with dag.parquet.")
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the same table as JSON: {collectives: [rows]}, bytes as raw counts.",
        ),
    ] = False,
) -> None:
    """Per group, collective and algorithm: instances, flows, bytes, bytes leaving servers."""
    from wormsim.analysis.tables import frame_table, print_tables
    from wormsim.clikit import user_errors
    from wormsim.collective.stage import read_dag
    from wormsim.collective.summary import collective_summary
    from wormsim.experiment import load_run_config

    with user_errors():
        cfg = load_run_config(run_dir)
        table = collective_summary(read_dag(run_dir), cfg.cluster.gpus_per_node)
    if as_json:
        typer.echo(json.dumps({"collectives": table.to_dicts()}, indent=2))
        return
    print_tables(frame_table(table, title="Flow DAG by collective"))
