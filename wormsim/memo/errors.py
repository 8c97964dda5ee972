"""Domain exceptions of the memo stage."""

from __future__ import annotations

__all__ = ["MemoError"]


class MemoError(ValueError):
    """Bad memo input or an unusable store; the message says what is wrong and how to fix it."""
