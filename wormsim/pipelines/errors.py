"""User-facing errors and how the CLI reports them (one message, exit status 2, no traceback)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

__all__ = ["ConfigError", "user_errors", "fail"]


class ConfigError(ValueError):
    """An experiment file or override is wrong; the message names the field and the fix."""


def fail(message: str) -> NoReturn:
    """Print ``error: message`` to stderr and exit with status 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn domain exceptions raised inside the block into a clean CLI failure (exit 2).

    Every stage's domain exception subclasses ``ValueError``; ``OSError`` covers files that are
    missing or cannot be written.
    """
    try:
        yield
    except typer.Exit:
        raise
    except FileNotFoundError as exc:
        fail(f"file not found: {exc.filename or exc}")
    except OSError as exc:
        fail(f"cannot access {exc.filename or ''}: {exc.strerror or exc}")
    except ValueError as exc:
        fail(str(exc))
