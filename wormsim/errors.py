"""The one user-facing error type, below every stage.

A :class:`WormsimError` means the *input* is wrong (a file, a field, a value, a run directory):
its message names what is wrong, the value, and how to fix it, and the command line turns it into
``error: …`` on stderr with exit status 2. Anything else that escapes is a bug in wormsim and
surfaces as a traceback.
"""

from __future__ import annotations

__all__ = ["WormsimError", "ConfigError", "UnreadableFileError"]


class WormsimError(ValueError):
    """Bad user input; the message says what, where, and how to fix it.

    It subclasses ``ValueError`` so pydantic validators may raise it; the CLI catches only this
    class (and ``OSError``), never a bare ``ValueError``.
    """


class ConfigError(WormsimError):
    """An experiment file or override is wrong; the message names the field and the fix."""


class UnreadableFileError(WormsimError):
    """A file exists but cannot be read as what it claims to be (truncated, corrupt, not UTF-8)."""
