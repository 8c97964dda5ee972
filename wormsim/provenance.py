"""Where a result came from: versions, the source commit, the machine and the command line."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from functools import cache
from importlib import metadata
from pathlib import Path

__all__ = ["versions", "source_commit", "machine", "command_line"]

_PACKAGES = ("wormsim", "numpy", "numba", "polars", "pydantic", "networkx", "typer")


def versions() -> dict[str, str]:
    """Versions of wormsim, Python and the libraries that shape results."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


@cache
def source_commit(root: Path | None = None) -> str:
    """Short git commit of the wormsim sources, ``+dirty`` if tracked files changed.

    ``unknown`` when wormsim is not running from a git checkout (an installed wheel) or git is
    missing. Untracked files do not count as dirty.
    """
    root = root or Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return "unknown"
    try:
        sha = subprocess.check_output(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True, stderr=subprocess.DEVNULL
        ).strip()
        dirty = subprocess.check_output(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            text=True,
            stderr=subprocess.DEVNULL,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+dirty" if dirty.strip() else "")


def machine() -> str:
    """Architecture, CPU count and Python version."""
    return f"{platform.machine()} {os.cpu_count()} cpu {platform.python_version()}"


def command_line(argv: Sequence[str]) -> str:
    """The command as a shell would take it back (program name reduced to its basename).

    Examples
    --------
    >>> command_line(["/x/bin/wormsim", "pipeline", "run", "a b.yaml", "--set", "sim.seed=1"])
    "wormsim pipeline run 'a b.yaml' --set sim.seed=1"
    """
    if not argv:
        return ""
    return shlex.join([Path(argv[0]).name, *argv[1:]])
