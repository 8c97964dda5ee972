"""Domain exceptions of the workload stage."""

from __future__ import annotations

from wormsim.errors import WormsimError

__all__ = ["WorkloadError"]


class WorkloadError(WormsimError):
    """The workload inputs break a rule; the message names the field and the fix."""
