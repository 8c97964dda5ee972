"""An imported SimAI / AICB workload as an experiment, and as a new run directory.

The workload package turns the file into ops and into a plain experiment document
(:func:`wormsim.workload.aicb_import.aicb_experiment_document`); this module reads the experiment
file the workload runs on and validates the result, which only the experiment layer can do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import polars as pl

from wormsim.progress import staged
from wormsim.rundir import staged_run_dir
from wormsim.workload.aicb_format import AicbWorkload, read_aicb
from wormsim.workload.aicb_import import aicb_experiment_document, aicb_to_ops
from wormsim.workload.stage import stage_import

from .config import ExperimentConfig, parse_experiment
from .document import apply_overrides, read_document
from .run_dir import init_run_dir

__all__ = ["import_experiment", "ImportedRun", "import_aicb_run"]


def import_experiment(
    w: AicbWorkload, path: str | Path, overrides: Sequence[str] | None = None, source: str = ""
) -> ExperimentConfig:
    """The experiment an imported workload runs in: ``path``'s cluster, collective, network
    and sim sections, with the model and parallel layout taken from the workload.

    Parameters
    ----------
    w : AicbWorkload
        The parsed workload file.
    path : path-like
        The experiment file (its ``model`` and ``parallel`` sections are replaced).
    overrides : sequence of str
        ``key.path=value`` items applied to the experiment file first.
    source : str
        The workload file's name, for messages and the placeholder model's name.

    Returns
    -------
    ExperimentConfig

    Raises
    ------
    ConfigError
        A bad experiment, or ``cluster.gpus`` different from the file's ``all_gpus``.
    """
    data = apply_overrides(read_document(Path(path)), list(overrides or []))
    return parse_experiment(aicb_experiment_document(w, data, source))


class ImportedRun(NamedTuple):
    """What :func:`import_aicb_run` wrote."""

    #: The ops table, as written to ``ops.parquet``.
    ops: pl.DataFrame
    #: The experiment written to ``experiment.yaml``, or None without one.
    cfg: ExperimentConfig | None


@staged("workload: importing an AICB workload")
def import_aicb_run(
    file: Path,
    out: Path,
    experiment: Path | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
) -> ImportedRun:
    """Turn an AICB workload file into ``ops.parquet`` in the new run directory ``out``.

    Parameters
    ----------
    file : Path
        The workload ``.txt``.
    out : Path
        The run directory to create (staged: it appears only when everything was written).
    experiment : Path, optional
        An experiment file whose cluster, collective, network and sim sections the workload
        runs on (see :func:`import_experiment`); with it, ``experiment.yaml`` is written too and
        the run can be simulated. Without it, only ``ops.parquet`` and the manifest.
    overrides : sequence of str
        ``--set`` items for the experiment, recorded in the manifest.
    force : bool
        Replace an existing run directory whole.

    Returns
    -------
    ImportedRun
    """
    workload = read_aicb(file)
    cfg = None
    if experiment is not None:
        cfg = import_experiment(workload, experiment, overrides, source=str(file))
    ops = aicb_to_ops(workload)
    with staged_run_dir(out, force) as stage_dir:
        if cfg is not None:
            init_run_dir(cfg, stage_dir, overrides)
        stage_import(stage_dir, ops, {"format": "aicb", "path": str(file)}, overrides)
    return ImportedRun(ops, cfg)
