"""A run directory's input files as its manifest records them: hashes, and what changed.

:func:`wormsim.experiment.inputs.copy_inputs` copies a run's input files (topology, workload,
Chakra traces, ``SimAI.conf``) into ``RUN/inputs/`` and records each in the manifest's
``inputs`` list (``field``, ``file``, ``source``, ``sha256``, ``size_bytes``, ``copied``). This
module reads those records back, with nothing but the run directory: :func:`changed_inputs`
(the copies, or the originals, as they are now) and :func:`input_differences` (two runs).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from wormsim.rundir import MANIFEST_FILE, read_json

__all__ = ["file_digest", "input_records", "changed_inputs", "input_differences"]

_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (memoised on path, size and modification time)."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def input_records(run_dir: Path) -> list[dict[str, Any]]:
    """The manifest's ``inputs`` records of a run directory (empty without them)."""
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        return []
    return list(read_json(path, "wormsim pipeline run --force").get("inputs", []))


def changed_inputs(run_dir: Path, against: str = "copy") -> list[str]:
    """What changed in a run's inputs since it ran, one line each (empty: nothing).

    ``against="copy"`` checks the files the run directory holds (or names, past the copy
    limit); ``"source"`` checks the originals the run was made from, as a rerun of the same
    command would read them.
    """
    out = []
    for r in input_records(run_dir):
        path = Path(r["file"]) if against == "copy" else Path(r["source"])
        if against == "copy" and r["copied"]:
            path = Path(run_dir) / path
        if not path.is_file():
            out.append(f"{r['field']}: {path} is missing")
        elif file_digest(path) != r["sha256"]:
            out.append(f"{r['field']}: {path} changed since the run (SHA-256 differs)")
    return out


def input_differences(run_a: Path, run_b: Path) -> list[str]:
    """Inputs two runs read that differ in content, by field and file name (empty: none)."""
    a, b = input_records(run_a), input_records(run_b)
    key = lambda r: (r["field"], Path(r["file"]).name)  # noqa: E731
    db = {key(r): r["sha256"] for r in b}
    out = []
    for r in a:
        other = db.get(key(r))
        if other is not None and other != r["sha256"]:
            out.append(f"{r['field']}: {Path(r['file']).name} differs (SHA-256)")
    fa, fb = {r["field"] for r in a}, {r["field"] for r in b}
    for field in sorted(fa ^ fb):
        out.append(f"{field}: only {'A' if field in fa else 'B'} reads it")
    return out
