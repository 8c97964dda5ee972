"""Domain exceptions of the memo stage."""

from __future__ import annotations

from wormsim.errors import WormsimError

__all__ = ["MemoError"]


class MemoError(WormsimError):
    """Bad memo input or an unusable store; the message says what is wrong and how to fix it."""
