"""An imported SimAI / AICB workload (or Chakra trace) as an experiment, and as a new run
directory.

The workload package turns the file into ops and into a plain experiment document
(:func:`wormsim.workload.aicb_import.aicb_experiment_document`); this module reads the experiment
file the workload runs on and validates the result, which only the experiment layer can do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import polars as pl

from wormsim.errors import ConfigError
from wormsim.progress import staged
from wormsim.rundir import staged_run_dir
from wormsim.workload.aicb_compute import fill_compute, placeholder_compute
from wormsim.workload.aicb_format import AicbWorkload, read_aicb
from wormsim.workload.aicb_import import aicb_experiment_document, aicb_to_ops
from wormsim.workload.chakra import chakra_experiment_document, chakra_to_ops, read_chakra
from wormsim.workload.stage import stage_import

from .config import ExperimentConfig, parse_experiment
from .document import apply_overrides, read_document
from .run_dir import init_run_dir

__all__ = [
    "import_experiment",
    "import_workload",
    "workload_format",
    "ImportedRun",
    "import_aicb_run",
]


def import_experiment(
    w: AicbWorkload,
    path: str | Path | Mapping[str, Any],
    overrides: Sequence[str] | None = None,
    source: str = "",
) -> ExperimentConfig:
    """The experiment an imported workload runs in: ``path``'s cluster, collective, network
    and sim sections, with the model and parallel layout taken from the workload.

    Parameters
    ----------
    w : AicbWorkload
        The parsed workload file.
    path : path-like or mapping
        The experiment file, or its sections as a mapping (its ``model`` and ``parallel``
        sections are replaced).
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
    data, base = _document(path, overrides or ())
    return parse_experiment(aicb_experiment_document(w, data, source), base)


def _document(
    experiment: str | Path | Mapping[str, Any], overrides: Sequence[str]
) -> tuple[dict[str, Any], Path | None]:
    """The overridden document and the directory its relative paths are taken from."""
    if isinstance(experiment, Mapping):
        return apply_overrides(dict(experiment), list(overrides)), None
    path = Path(experiment)
    return apply_overrides(read_document(path), list(overrides)), path.parent


def workload_format(file: Path) -> Literal["aicb", "chakra"]:
    """``chakra`` for a trace (``PREFIX`` with a ``PREFIX.0.et`` beside it, or a ``.et``
    file), ``aicb`` for an existing file or a ``.txt`` name; a path that is neither (no file,
    no ``.txt``) is taken as a Chakra prefix, so a missing trace is reported as one."""
    file = Path(file)
    if file.suffix == ".et" or file.with_name(f"{file.name}.0.et").is_file():
        return "chakra"
    if file.exists() or file.suffix.lower() == ".txt":
        return "aicb"
    return "chakra"


def import_workload(
    file: Path,
    format: Literal["aicb", "chakra"],
    experiment: Path | Mapping[str, Any] | None = None,
    overrides: Sequence[str] = (),
) -> tuple[pl.DataFrame, ExperimentConfig | None]:
    """The ops of a workload file or trace, and the experiment it runs in.

    Parameters
    ----------
    file : Path
        An AICB ``.txt`` or the prefix of Chakra traces.
    format : {"aicb", "chakra"}
    experiment : path-like or mapping, optional
        The experiment whose cluster, collective, network and sim sections the workload runs
        on (model and parallel come from the file); None: no experiment.
    overrides : sequence of str
        ``key.path=value`` items applied to the experiment.

    Returns
    -------
    ops : polars.DataFrame
    cfg : ExperimentConfig or None
    """
    if format == "aicb":
        workload = read_aicb(file)
        if experiment is None:
            return aicb_to_ops(workload), None
        data, base = _document(experiment, overrides)
        placeholder = placeholder_compute(workload)
        compute = _compute_from(data, placeholder)
        doc = aicb_experiment_document(workload, data, str(file), keep_model=compute == "model")
        doc["workload"] = _source(file, "aicb", compute, placeholder)
        cfg = parse_experiment(doc, base)
        if compute == "model":
            workload = fill_compute(workload, cfg.model, cfg.parallel, cfg.hardware)
        return aicb_to_ops(workload), cfg
    trace = read_chakra(file)
    ops = chakra_to_ops(trace)
    if experiment is None:
        return ops, None
    data, base = _document(experiment, overrides)
    doc = chakra_experiment_document(len(trace.files), data, str(file))
    doc["workload"] = _source(file, "chakra", "file", False)
    return ops, parse_experiment(doc, base)


def _compute_from(data: Mapping[str, Any], placeholder: bool) -> str:
    """``model`` or ``file``: the document's ``workload.compute`` if it says, else ``model``
    for a file with placeholder compute when the document names a model to fill it from."""
    given = data.get("workload")
    if isinstance(given, Mapping) and given.get("compute") in ("file", "model"):
        if given["compute"] == "model" and data.get("model") is None:
            raise ConfigError(
                "workload.compute is 'model' but the experiment names no model to compute "
                "from; add --set model=<preset> (e.g. gpt-13b)"
            )
        return str(given["compute"])
    return "model" if placeholder and data.get("model") is not None else "file"


def _source(file: Path, format: str, compute: str, placeholder: bool) -> dict[str, Any]:
    return {"file": str(Path(file).absolute()), "format": format, "compute": compute,
            "placeholder": placeholder}  # fmt: skip


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
    format: Literal["aicb", "chakra"] = "aicb",
) -> ImportedRun:
    """Turn an AICB workload file (or a Chakra trace) into ``ops.parquet`` in the new run
    directory ``out``.

    Parameters
    ----------
    file : Path
        The workload ``.txt``; with ``format="chakra"``, the prefix of the per-rank
        ``PREFIX.<rank>.et`` files (:mod:`wormsim.workload.chakra`).
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
    format : {"aicb", "chakra"}
        The file's format.

    Returns
    -------
    ImportedRun
    """
    ops, cfg = import_workload(file, format, experiment, overrides)
    with staged_run_dir(out, force) as stage_dir:
        if cfg is not None:
            init_run_dir(cfg, stage_dir, overrides)
        stage_import(stage_dir, ops, {"format": format, "path": str(file)}, overrides)
    return ImportedRun(ops, cfg)
