"""The input files of a run, kept with it: copied into ``RUN/inputs/``, hashed, and checked.

A run reads files besides its experiment: a topology file (``cluster.topology_file``), a
workload file or Chakra traces (``workload.file``) and, from ``--config``, a ``SimAI.conf``.
:func:`copy_inputs` copies each into the run directory's ``inputs/`` (a file larger than
:data:`COPY_LIMIT_BYTES` is not copied) and records every file with its SHA-256 and size in the
manifest's ``inputs`` list; ``experiment.yaml`` then names the copies by relative path, so
``wormsim pipeline run RUN/experiment.yaml`` reproduces the run on any machine. A file too large
to copy stays named by its absolute path, and its hash still tells whether it changed.

:func:`wormsim.run_inputs.changed_inputs` compares the records with the files as they are now:
the copies (edited in the run directory?) or the originals (edited since the run?); a sweep
reruns a point whose inputs changed, and ``analysis compare`` names inputs that differ between
two runs (:func:`wormsim.run_inputs.input_differences`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from wormsim.run_inputs import file_digest

__all__ = [
    "COPY_LIMIT_BYTES",
    "INPUTS_DIR",
    "input_files",
    "copy_inputs",
]

#: Files up to this size are copied into the run directory; larger ones are hashed only.
COPY_LIMIT_BYTES = 64 * 2**20
#: The run directory's folder of copied inputs.
INPUTS_DIR = "inputs"


def _chakra_files(prefix: Path) -> list[Path]:
    files = []
    while (p := prefix.parent / f"{prefix.name}.{len(files)}.et").is_file():
        files.append(p)
    group = prefix.parent / "comm_group.json"
    return files + ([group] if group.is_file() else [])


def input_files(cfg: Any, extra: dict[str, Path] | None = None) -> dict[str, list[Path]]:
    """The files a resolved experiment reads, by the field that names them."""
    out: dict[str, list[Path]] = {}
    if cfg.cluster.topology_file is not None:
        out["cluster.topology_file"] = [Path(cfg.cluster.topology_file)]
    if cfg.workload is not None:
        path = Path(cfg.workload.file)
        out["workload.file"] = _chakra_files(path) if cfg.workload.format == "chakra" else [path]
    for field, path in (extra or {}).items():
        out[field] = [Path(path)]
    return out


def copy_inputs(
    cfg: Any, run_dir: Path, extra: dict[str, Path] | None = None
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Copy a run's input files into ``run_dir/inputs`` and describe them.

    Parameters
    ----------
    cfg : ExperimentConfig
        The resolved experiment (absolute file paths).
    run_dir : Path
        The run directory (normally its staging directory).
    extra : dict, optional
        Other inputs by role, e.g. ``{"network": Path("SimAI.conf")}`` (copied and recorded;
        the experiment holds their values).

    Returns
    -------
    paths : dict
        Field -> the path ``experiment.yaml`` should hold: relative to ``run_dir`` for a copy,
        absolute for a file over :data:`COPY_LIMIT_BYTES` (a Chakra prefix for traces).
    records : list of dict
        One per file: ``field``, ``file`` (as recorded), ``source`` (the original),
        ``sha256``, ``size_bytes``, ``copied``.
    """
    paths: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    for field, files in input_files(cfg, extra).items():
        folder = Path(INPUTS_DIR) / (field.rsplit(".", 1)[-1] if len(files) > 1 else "")
        fits = sum(f.stat().st_size for f in files) <= COPY_LIMIT_BYTES
        for f in files:
            size = f.stat().st_size
            rel = folder / f.name
            if fits:
                (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, run_dir / rel)
            records.append({"field": field, "file": str(rel) if fits else str(f),
                            "source": str(f), "sha256": file_digest(f), "size_bytes": size,
                            "copied": fits})  # fmt: skip
        if field == "workload.file" and cfg.workload.format == "chakra":
            prefix = Path(cfg.workload.file)
            paths[field] = str(folder / prefix.name) if fits else str(prefix)
        elif files:
            paths[field] = records[-1]["file"]
    return paths, records
