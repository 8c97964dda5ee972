"""``wormsim workload …``: build, show, import and export the ops of one iteration."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(
    help="Stage 1: model + parallelism -> per-rank compute and communication ops.",
    no_args_is_help=True,
)

SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: key.path=value (repeatable)."),
]


@app.command()
def build(
    experiment: Annotated[Path, typer.Argument(help="Experiment file (.yaml, .toml, .json).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Run directory to write.")],
    set_: SetOpt = None,
) -> None:
    """Build ops.parquet for an experiment into a run directory."""
    from wormsim.pipelines.config import load_experiment
    from wormsim.pipelines.errors import user_errors
    from wormsim.pipelines.stages import init_run_dir, stage_workload

    with user_errors():
        cfg = load_experiment(experiment, set_ or [])
        init_run_dir(cfg, out, command=f"wormsim workload build {experiment}")
        ops = stage_workload(cfg, out)
    typer.echo(f"wrote {out / 'ops.parquet'} ({ops.height} ops, {cfg.cluster.gpus} ranks)")


@app.command()
def show(run_dir: Annotated[Path, typer.Argument(help="Run directory with ops.parquet.")]) -> None:
    """Per parallel dimension: bytes per rank and op counts; compute time; bubble fraction."""
    from wormsim.analysis.tables import frame_table, mapping_table, print_tables
    from wormsim.pipelines.errors import user_errors
    from wormsim.pipelines.stages import read_ops
    from wormsim.workload.summary import traffic_by_group, workload_summary

    with user_errors():
        ops = read_ops(run_dir)
        traffic = traffic_by_group(ops)
        summary = workload_summary(ops)
    print_tables(
        frame_table(traffic, title="Communication per parallel dimension"),
        mapping_table(summary, title="Compute and schedule"),
    )


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="Workload file to import.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Run directory to write.")],
    format_: Annotated[str, typer.Option("--format", help="Input format.")] = "aicb",
) -> None:
    """Turn a SimAI/AICB workload .txt into ops.parquet in a run directory."""
    from wormsim.pipelines.errors import fail, user_errors
    from wormsim.pipelines.rundir import Manifest, write_parquet
    from wormsim.workload.aicb import aicb_to_ops, read_aicb

    if format_ != "aicb":
        fail(f"--format {format_!r} is not supported; the supported format is 'aicb'")
    with user_errors():
        workload = read_aicb(file)
        ops = aicb_to_ops(workload)
        out.mkdir(parents=True, exist_ok=True)
        write_parquet(out / "ops.parquet", ops)
        man = Manifest(out)
        man.set("imported_from", {"format": "aicb", "path": str(file)})
        man.save()
    typer.echo(f"wrote {out / 'ops.parquet'} ({ops.height} ops)")


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="Run directory with ops.parquet.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="File to write.")],
    format_: Annotated[str, typer.Option("--format", help="Output format.")] = "aicb",
) -> None:
    """Write a run's ops in the SimAI/AICB workload format."""
    from wormsim.pipelines.errors import fail, user_errors
    from wormsim.pipelines.rundir import write_text
    from wormsim.pipelines.stages import load_run_config, read_ops
    from wormsim.workload.aicb import ops_to_aicb

    if format_ != "aicb":
        fail(f"--format {format_!r} is not supported; the supported format is 'aicb'")
    with user_errors():
        cfg = load_run_config(run_dir)
        ops = read_ops(run_dir)
        text = ops_to_aicb(ops, cfg)
        write_text(out, text)
    typer.echo(f"wrote {out}")
