"""The experiment: the file that composes every stage's spec, above the stages.

An experiment file names the model, parallel layout and hardware (workload), how collectives
become flows (collective), and the cluster, network and engine (netsim). This package reads it
(:mod:`~wormsim.experiment.document`), validates it into an :class:`ExperimentConfig`
(:mod:`~wormsim.experiment.config`), keeps it in a run directory as ``experiment.yaml``
(:mod:`~wormsim.experiment.run_dir`) and builds one for an imported AICB workload
(:mod:`~wormsim.experiment.aicb`).

Layering: the stage packages' library modules never import this package (their run-directory
steps take the sections they read); the stages' ``cli.py`` modules and the orchestrator
(:mod:`wormsim.pipelines`) do.
"""

from __future__ import annotations

from .aicb import ImportedRun, import_aicb_run, import_experiment, import_workload, workload_format
from .config import ExperimentConfig, config_hash, dump_yaml, load_experiment, parse_experiment
from .document import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    apply_overrides,
    load_yaml,
    read_document,
)
from .run_dir import EXPERIMENT_FILE, init_run_dir, load_run_config

__all__ = [
    "ExperimentConfig",
    "load_experiment",
    "parse_experiment",
    "apply_overrides",
    "config_hash",
    "dump_yaml",
    "read_document",
    "load_yaml",
    "MAX_FILE_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "EXPERIMENT_FILE",
    "init_run_dir",
    "load_run_config",
    "import_experiment",
    "import_aicb_run",
    "import_workload",
    "workload_format",
    "ImportedRun",
]
