"""Domain exceptions of the workload stage."""

from __future__ import annotations

__all__ = ["WorkloadError"]


class WorkloadError(ValueError):
    """The workload inputs break a rule; the message names the field and the fix."""
