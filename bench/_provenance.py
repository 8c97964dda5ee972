"""Provenance recorded with every benchmark result: commit and machine."""

from __future__ import annotations

from wormsim.provenance import machine, source_commit

__all__ = ["git_commit", "machine"]


def git_commit() -> str:
    """Short commit of the checkout, ``+dirty`` if tracked files changed, or ``unknown``."""
    return source_commit()
