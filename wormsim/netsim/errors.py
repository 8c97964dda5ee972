"""Domain exceptions of netsim."""

from __future__ import annotations

from wormsim.errors import WormsimError

__all__ = ["NetsimInputError"]


class NetsimInputError(WormsimError):
    """Bad user input (file, key, line or value); the message says what and how to fix it."""
