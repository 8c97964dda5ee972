"""The experiment of a run directory: ``experiment.yaml``, written first and read by later stages.

A run directory starts with the resolved experiment and a fresh manifest (:func:`init_run_dir`);
every later command reads the experiment back (:func:`load_run_config`) and hands the stage step
the sections it needs. The rest of the run directory (staging, atomic files, the manifest, the
stage tables) is :mod:`wormsim.rundir` and the stages' ``stage`` modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from wormsim.errors import ConfigError
from wormsim.rundir import Manifest, write_text

from .config import ExperimentConfig, config_hash, load_experiment
from .inputs import copy_inputs

__all__ = ["EXPERIMENT_FILE", "init_run_dir", "load_run_config"]

#: The resolved experiment in a run directory.
EXPERIMENT_FILE = "experiment.yaml"


def init_run_dir(
    cfg: ExperimentConfig,
    run_dir: Path,
    overrides: Sequence[str] = (),
    argv: list[str] | None = None,
    extra_inputs: dict[str, Path] | None = None,
) -> Path:
    """Write the resolved ``experiment.yaml`` and a fresh manifest into ``run_dir``.

    Parameters
    ----------
    cfg : ExperimentConfig
        The experiment, every default filled in.
    run_dir : Path
        Normally the staging directory of :func:`wormsim.rundir.staged_run_dir`.
    overrides : sequence of str
        The ``key.path=value`` settings applied on top of the experiment file (``--set`` and
        ``--mode``); the manifest records them.
    argv : list of str, optional
        The command line to record (default ``sys.argv``); the manifest also records versions
        and the source commit.
    extra_inputs : dict, optional
        Input files the experiment holds by value, by role (``{"network": SimAI.conf}``):
        copied and recorded like the files it names (:mod:`wormsim.experiment.inputs`).

    Returns
    -------
    Path
        ``run_dir``.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    paths, records = copy_inputs(cfg, run_dir, extra_inputs)
    doc = cfg.model_dump(mode="json")
    if "cluster.topology_file" in paths:
        doc["cluster"]["topology_file"] = paths["cluster.topology_file"]
    if "workload.file" in paths:
        doc["workload"]["file"] = paths["workload.file"]
    write_text(run_dir / EXPERIMENT_FILE, yaml.safe_dump(doc, sort_keys=False))
    man = Manifest(run_dir)
    man.set("experiment", cfg.name)
    man.set("config_hash", config_hash(cfg))
    man.set("inputs", records)
    man.invocation(overrides, argv)
    man.save()
    return run_dir


def load_run_config(run_dir: Path) -> ExperimentConfig:
    """The resolved experiment of a run directory.

    Raises
    ------
    ConfigError
        ``run_dir`` has no ``experiment.yaml`` (it is not a run directory), or the file is not a
        valid experiment.
    """
    path = Path(run_dir) / EXPERIMENT_FILE
    if not path.is_file():
        raise ConfigError(
            f"{run_dir} is not a run directory (no {EXPERIMENT_FILE}); create one with "
            "`wormsim workload build EXPERIMENT -o RUN_DIR` or `wormsim pipeline run`"
        )
    return load_experiment(path)
