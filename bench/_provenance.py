"""Provenance recorded with every benchmark result: commit and machine."""

from __future__ import annotations

import subprocess
from pathlib import Path

from wormsim.provenance import machine, source_commit

__all__ = ["git_commit", "machine", "commit_of", "checkout_row"]


def git_commit() -> str:
    """Short commit of the checkout, ``+dirty`` if tracked files changed, or ``unknown``."""
    return source_commit()


def commit_of(path: Path) -> str:
    """The short commit of the checkout at ``path`` (the one measured, whatever ``wormsim`` this
    process imports), or ``unknown``."""
    out = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def checkout_row(date: str, path: Path, label: str, rec: dict) -> dict:
    """A result row of the checkout ``path`` (``this`` or ``ref``): date, commit, the record,
    the machine."""
    return {"date": date, "commit": commit_of(path), "checkout": label, **rec, "machine": machine()}
