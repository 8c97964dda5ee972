"""The workload stage over a run directory: ``ops.parquet``, built or imported, and read back.

:func:`stage_workload` builds the table from the experiment's sections, writes it atomically,
removes the later stages' (now stale) outputs and records its wall time in ``manifest.json``;
:func:`read_ops` is how every later stage reads it, checked against
:data:`wormsim.workload.ops.OPS_SCHEMA`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from wormsim.progress import staged
from wormsim.rundir import (
    Manifest,
    Stopwatch,
    drop_downstream,
    read_table,
    write_parquet,
    write_text,
)

from .aicb_export import ops_to_aicb
from .builder import build_ops
from .chakra_export import write_chakra
from .hardware import HardwareSpec
from .model import ModelSpec
from .ops import OPS_SCHEMA
from .parallel import ParallelSpec

__all__ = [
    "OPS_FILE",
    "WorkloadSections",
    "stage_workload",
    "stage_import",
    "stage_export",
    "read_ops",
]

#: The workload stage's table in a run directory.
OPS_FILE = "ops.parquet"

_HOW = "wormsim workload build"


class _Gpus(Protocol):
    @property
    def gpus(self) -> int: ...


class WorkloadSections(Protocol):
    """The sections of an experiment the workload stage reads (an ``ExperimentConfig`` has them).

    Attributes
    ----------
    model, parallel, hardware
        The model shape, parallel layout and compute model.
    cluster
        Anything with ``gpus``, the world size.
    """

    @property
    def model(self) -> ModelSpec: ...

    @property
    def parallel(self) -> ParallelSpec: ...

    @property
    def hardware(self) -> HardwareSpec: ...

    @property
    def cluster(self) -> _Gpus: ...


@staged("workload: building ops")
def stage_workload(cfg: WorkloadSections, run_dir: Path) -> pl.DataFrame:
    """Build ``ops.parquet`` for the experiment into ``run_dir``.

    Parameters
    ----------
    cfg : WorkloadSections
        The experiment (its ``model``, ``parallel``, ``hardware`` and ``cluster.gpus``).
    run_dir : Path
        The run directory; the later stages' outputs in it are removed.

    Returns
    -------
    polars.DataFrame
        The ops table, as written.
    """
    with Stopwatch() as sw:
        ops = build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)
        write_parquet(Path(run_dir) / OPS_FILE, ops)
    drop_downstream(run_dir, "workload")
    man = Manifest(run_dir)
    man.stage("workload", sw.seconds, ops=ops.height)
    man.save()
    return ops


def stage_import(
    run_dir: Path, ops: pl.DataFrame, imported_from: dict[str, Any], overrides: Sequence[str] = ()
) -> None:
    """Write an imported ops table into ``run_dir`` and record where it came from.

    Parameters
    ----------
    run_dir : Path
        A new run directory (normally a staging directory).
    ops : polars.DataFrame
        The table, e.g. from :func:`wormsim.workload.aicb_import.aicb_to_ops`.
    imported_from : dict
        The manifest's ``imported_from`` record (format and path of the source file).
    overrides : sequence of str
        The ``--set`` overrides of the command, recorded with its command line.
    """
    write_parquet(Path(run_dir) / OPS_FILE, ops)
    man = Manifest(run_dir)
    man.invocation(overrides)
    man.set("imported_from", imported_from)
    man.save()


def stage_export(
    run_dir: Path, out: Path, cfg: WorkloadSections | None = None, format: str = "aicb"
) -> Path:
    """Write the ops of ``run_dir`` as a SimAI/AICB workload file ``out`` (atomically), or with
    ``format="chakra"`` as Chakra traces ``out.<rank>.et`` and ``comm_group.json`` beside them
    (:func:`wormsim.workload.chakra.write_chakra`).

    Parameters
    ----------
    run_dir : Path
        A run directory with ``ops.parquet``.
    out : Path
        The ``.txt`` file to write.
    cfg : WorkloadSections, optional
        The run's experiment, for its parallel layout (inferred from the ops without it); see
        :func:`wormsim.workload.aicb_export.ops_to_workload`.

    Returns
    -------
    Path
        ``out``.
    """
    if format == "chakra":
        write_chakra(read_ops(run_dir), out)
        return out
    return write_text(out, ops_to_aicb(read_ops(run_dir), cfg))


def read_ops(run_dir: Path) -> pl.DataFrame:
    """``ops.parquet`` of a run directory, checked against its contract.

    Raises
    ------
    ConfigError
        The run directory has no ``ops.parquet``.
    UnreadableFileError
        The file is damaged or does not follow :data:`~wormsim.workload.ops.OPS_SCHEMA`.
    """
    return read_table(run_dir, OPS_FILE, _HOW, schema=OPS_SCHEMA)
