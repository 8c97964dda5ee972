"""``wormsim workload …``: build, show, import and export the ops of one iteration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from wormsim.clikit import JsonOpt, SetOpt

__all__ = ["app"]

app = typer.Typer(
    help="Stage 1: model + parallelism -> per-rank compute and communication ops.",
    no_args_is_help=True,
)

ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing run directory whole.")]
FormatOpt = Annotated[
    Literal["aicb", "chakra"],
    typer.Option(
        "--format", help="aicb: a SimAI/AICB .txt; chakra: Chakra traces PREFIX.<rank>.et."
    ),
]


@app.command()
def build(
    experiment: Annotated[
        Path, typer.Argument(metavar="EXPERIMENT", help="Experiment file (.yaml, .toml, .json).")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="Run directory to create.")],
    set_: SetOpt = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Build ops.parquet for an experiment into a new run directory."""
    from wormsim.clikit import creates, emit, user_errors
    from wormsim.experiment import init_run_dir, load_experiment
    from wormsim.rundir import staged_run_dir
    from wormsim.workload.stage import stage_workload

    creates(out)
    with user_errors():
        cfg = load_experiment(experiment, set_ or [])
        with staged_run_dir(out, force) as stage_dir:
            init_run_dir(cfg, stage_dir, set_ or [])
            ops = stage_workload(cfg, stage_dir)
    path = out / "ops.parquet"
    result = {"ops_file": str(path), "ops_count": ops.height, "ranks_count": cfg.cluster.gpus}
    emit(result, as_json, f"wrote {path} ({ops.height} ops, {cfg.cluster.gpus} ranks)")


@app.command()
def show(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="Run directory with ops.parquet.")
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the same figures as JSON: {traffic: [rows], summary: {...}}, raw "
            "numbers in the units their names' suffixes say (_bytes, _s, _pct).",
        ),
    ] = False,
) -> None:
    """Per parallel dimension: bytes per rank and op counts; compute time; bubble fraction."""
    from wormsim.analysis.tables import frame_table, mapping_table, print_tables
    from wormsim.clikit import user_errors
    from wormsim.workload.stage import read_ops
    from wormsim.workload.summary import traffic_by_group, workload_summary

    with user_errors():
        ops = read_ops(run_dir)
        traffic = traffic_by_group(ops)
        summary = workload_summary(ops)
    if as_json:
        typer.echo(json.dumps({"traffic": traffic.to_dicts(), "summary": summary}, indent=2))
        return
    print_tables(
        frame_table(traffic, title="Communication per parallel dimension"),
        mapping_table(summary, title="Compute and schedule"),
    )


@app.command("import")
def import_(
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="Workload file or Chakra trace prefix to import.")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="Run directory to create.")],
    format_: FormatOpt = "aicb",
    experiment: Annotated[
        Path | None,
        typer.Option(
            "--experiment",
            help="Experiment whose cluster, collective, network and sim sections the imported "
            "workload runs on (its parallel degrees are taken from the file); without it only "
            "ops.parquet is written.",
        ),
    ] = None,
    set_: SetOpt = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Turn a SimAI/AICB workload .txt, or Chakra traces (FILE = the prefix of the per-rank
    PREFIX.<rank>.et files, with comm_group.json beside them if there is one), into ops.parquet
    in a new run directory."""
    from wormsim.clikit import creates, emit, user_errors
    from wormsim.experiment import import_aicb_run

    creates(out)
    with user_errors():
        ops, cfg = import_aicb_run(file, out, experiment, set_ or [], force, format_)
        if format_ == "aicb":
            _warn_placeholder(file, cfg)
    path = out / "ops.parquet"
    text = f"wrote {path} ({ops.height} ops)"
    if cfg is None:
        text += "\nto simulate it, import again with --experiment EXP (cluster and network)"
    result = {"ops_file": str(path), "ops_count": ops.height, "simulable": cfg is not None}
    emit(result, as_json, text)


def _warn_placeholder(file: Path, cfg: object) -> None:
    """Say loudly that an imported AICB file's compute times are placeholders (unless a model
    filled them)."""
    from wormsim.clikit import notice
    from wormsim.workload.aicb import read_aicb
    from wormsim.workload.aicb_compute import placeholder_compute
    from wormsim.workload.source import PLACEHOLDER_WARNING

    source = getattr(cfg, "workload", None)
    if source is not None and source.compute == "model":
        return
    if placeholder_compute(read_aicb(file)):
        notice(PLACEHOLDER_WARNING.format(file=file.name))


@app.command()
def export(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="Run directory with ops.parquet.")
    ],
    out: Annotated[
        Path, typer.Option("-o", "--out", help="File to write (chakra: the traces' prefix).")
    ],
    format_: FormatOpt = "aicb",
    as_json: JsonOpt = False,
) -> None:
    """Write a run's ops in the SimAI/AICB workload format, or as Chakra traces
    OUT.<rank>.et and comm_group.json that ASTRA-sim runs."""
    from wormsim.clikit import emit, user_errors
    from wormsim.experiment import load_run_config
    from wormsim.workload.stage import stage_export

    with user_errors():
        cfg = load_run_config(run_dir) if format_ == "aicb" else None
        stage_export(run_dir, out, cfg, format_)
    shown = str(out) if format_ == "aicb" else f"{out}.<rank>.et"
    emit({"file": shown, "format": format_}, as_json, f"wrote {shown}")
