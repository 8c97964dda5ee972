"""Provenance recorded with every benchmark result: commit and machine."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

__all__ = ["git_commit", "machine"]

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """Short commit of the checkout, ``+dirty`` if tracked files changed, or ``unknown``."""
    try:
        sha = subprocess.check_output(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True
        ).strip()
        dirty = subprocess.check_output(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, text=True
        )
        return sha + ("+dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> str:
    """Architecture, CPU count and Python version."""
    return f"{platform.machine()} {os.cpu_count()} cpu {platform.python_version()}"
