"""Domain exceptions of netsim."""

from __future__ import annotations

__all__ = ["NetsimInputError"]


class NetsimInputError(ValueError):
    """Bad user input (file, key, line or value); the message says what and how to fix it."""
