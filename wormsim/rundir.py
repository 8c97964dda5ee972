"""Run directories: atomic writes, the resolved config and the manifest (DESIGN §1).

A run directory holds ``experiment.yaml`` (resolved), ``manifest.json`` (versions, config hash,
per-stage wall time) and the stage outputs. Every file is written to a temporary name in the same
directory and renamed into place, so a crash never leaves a half file that looks whole.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "atomic_write",
    "write_text",
    "write_json",
    "write_parquet",
    "versions",
    "Manifest",
]


def atomic_write(path: Path, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp)`` on a temporary path beside ``path``, then rename it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        writer(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Atomically write text."""
    return atomic_write(path, lambda p: p.write_text(text))


def write_json(path: Path, obj: Any) -> Path:
    """Atomically write JSON (indented, keys in insertion order)."""
    return write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def write_parquet(path: Path, df: pl.DataFrame) -> Path:
    """Atomically write a parquet file."""
    return atomic_write(path, lambda p: df.write_parquet(p))


def versions() -> dict[str, str]:
    """Versions of wormsim, Python and the libraries that shape results."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in ("wormsim", "numpy", "numba", "polars", "pydantic", "networkx", "typer"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


class Manifest:
    """``manifest.json`` of a run directory, updated stage by stage."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / "manifest.json"
        if self.path.is_file():
            self.data: dict[str, Any] = json.loads(self.path.read_text())
        else:
            self.data = {"created": datetime.now(UTC).isoformat(), "stages": {}}
        self.data["versions"] = versions()

    def set(self, key: str, value: Any) -> None:
        """Set a top-level field."""
        self.data[key] = value

    def stage(self, name: str, wall_s: float, **extra: Any) -> None:
        """Record a stage's wall time and extra facts."""
        self.data.setdefault("stages", {})[name] = {
            "wall_s": round(wall_s, 6),
            "finished": datetime.now(UTC).isoformat(),
            **extra,
        }

    def save(self) -> None:
        """Write the manifest atomically."""
        write_json(self.path, self.data)


class Stopwatch:
    """``with Stopwatch() as sw: ...; sw.seconds``."""

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
