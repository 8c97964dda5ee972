"""An imported SimAI / AICB workload as an experiment.

The workload package turns the file into ops and into a plain experiment document
(:func:`wormsim.workload.aicb_import.aicb_experiment_document`); this module reads the experiment
file the workload runs on and validates the result, which only the experiment layer can do.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wormsim.workload.aicb_format import AicbWorkload
from wormsim.workload.aicb_import import aicb_experiment_document

from .config import ExperimentConfig, parse_experiment
from .document import apply_overrides, read_document

__all__ = ["import_experiment"]


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
