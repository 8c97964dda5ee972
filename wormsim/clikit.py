"""What every ``wormsim`` command shares: one way to fail, and one way to map errors to exit 2."""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from wormsim.errors import WormsimError

__all__ = ["EXIT_OK", "EXIT_SOME_FAILED", "EXIT_BAD_INPUT", "EXIT_INCOMPLETE", "EXIT_INTERRUPTED"]
__all__ += ["fail", "user_errors", "notice", "SetOpt", "JsonOpt", "QuietOpt", "emit"]
__all__ += ["readable_usage", "creates", "interrupted"]

EXIT_OK = 0
"""Everything asked for was done."""
EXIT_SOME_FAILED = 1
"""A sweep ran, but some of its points failed (the others are kept)."""
EXIT_BAD_INPUT = 2
"""Bad input or an I/O failure (a missing file, a full disk): nothing was half-written."""
EXIT_INCOMPLETE = 3
"""The simulation ran but could not complete (DAG nodes that never finished)."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C / SIGINT (128 + 2, the shell convention); the partial output is removed."""


#: ``--set KEY=VALUE``, the same option, metavar and wording on every command that takes it.
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override an experiment value, e.g. --set parallel.tp=4 (repeatable; values are "
        "YAML scalars).",
    ),
]

#: ``--json``: print the command's result as one JSON object on stdout.
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the result as JSON (raw numbers, units in keys).")
]


#: ``--quiet``/``-q`` on a command: the same as ``wormsim -q`` before it.
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress bars or progress lines on stderr (as wormsim -q)."
    ),
]


def readable_usage() -> None:
    """Usage lines show arguments as ``EXPERIMENT`` and ``[RUN_DIR]``, not ``{experiment}``.

    Typer writes a required argument as ``{name}`` with its parameter name; this shows the
    metavar (or the name in capitals) bare when required and in brackets when optional, as
    the usage lines of most tools do. A Typer without that hook is left as it is.
    """
    core = getattr(typer, "core", None)
    cls = getattr(core, "TyperArgument", None)
    if cls is None or not hasattr(cls, "_usage_display_name"):
        return

    def usage_name(self: Any) -> str:
        name = self.metavar or (self.name or "").upper()
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    cls._usage_display_name = usage_name


def emit(result: dict[str, Any], as_json: bool, text: str) -> None:
    """Print a command's result: ``result`` as JSON with ``--json``, else the line ``text``."""
    typer.echo(json.dumps(result, indent=2, default=str) if as_json else text)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``error: message`` to stderr and exit with status ``code`` (default 2)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn user-facing errors raised inside the block into ``error: …`` and exit status 2.

    Caught: :class:`~wormsim.errors.WormsimError` (bad input, named by the raiser) and
    ``OSError`` (a file that is missing, unreadable, or cannot be written, e.g. a full disk).
    Everything else is a bug and keeps its traceback.
    """
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        raise typer.Exit(interrupted()) from None
    except WormsimError as exc:
        fail(str(exc), getattr(exc, "exit_code", EXIT_BAD_INPUT))
    except FileNotFoundError as exc:
        fail(f"file not found: {exc.filename or exc}")
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        if exc.errno == errno.ENOSPC:
            fail(f"no space left on the device while writing{where}; free some space and rerun")
        fail(f"cannot access{where}: {exc.strerror or exc}")


#: The run directory the running command creates (:func:`creates`), for :func:`interrupted`.
_OUTPUT: list[Path] = []


def creates(out: Path) -> None:
    """Declare the run directory this command creates: an interrupt after it is complete
    leaves it in place and exits 0 (:func:`interrupted`)."""
    _OUTPUT.append(Path(out))


def interrupted() -> int:
    """Report a Ctrl-C / SIGINT and return the exit status, by one rule.

    If the command's run directory (:func:`creates`) was complete before the signal, it is
    kept: say so, status 0. Otherwise the partial output is already removed (run directories
    are staged): say so, status 130.
    """
    from wormsim.rundir import completed

    done = [p for p in _OUTPUT if completed(p)]
    if done:
        typer.echo(f"interrupted after {done[-1]} was complete; it is kept", err=True)
        return EXIT_OK
    typer.echo("error: interrupted; the partial output was removed", err=True)
    return EXIT_INTERRUPTED


def notice(message: str | None) -> None:
    """Print a one-line notice to stderr (nothing for ``None``)."""
    if message:
        typer.echo(message, err=True)
