"""The ``wormsim`` command: one sub-app per stage.

Exit status (:mod:`wormsim.clikit`): 0 done; 1 some points of a sweep failed (the others are
kept); 2 bad input or an I/O failure such as a full disk (nothing half-written); 3 a simulation
that could not complete; 130 interrupted (Ctrl-C, SIGINT; the partial run directory is removed).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from wormsim.analysis.cli import app as analysis_app
from wormsim.clikit import EXIT_INTERRUPTED, interrupted, readable_usage
from wormsim.collective.cli import app as collective_app
from wormsim.memo.cli import app as memo_app
from wormsim.netsim.cli import app as netsim_app
from wormsim.netsim.fabric.cli import app as topology_app
from wormsim.pipelines.cli import app as pipeline_app
from wormsim.workload.cli import app as workload_app

__all__ = ["app"]

app = typer.Typer(
    help="wormsim: packet-level network simulation of large-model training.\n\n"
    "Exit status: 0 done, 1 some sweep points failed, 2 bad input or I/O failure, "
    "3 the simulation could not complete, 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from wormsim import __version__

        typer.echo(f"wormsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="No progress bars or progress lines on stderr."),
    ] = False,
) -> None:
    """wormsim: packet-level network simulation of large-model training."""
    from wormsim import progress

    progress.set_enabled(not quiet)


app.add_typer(workload_app, name="workload")
app.add_typer(collective_app, name="collective")
app.add_typer(netsim_app, name="netsim")
app.add_typer(memo_app, name="memo")
app.add_typer(analysis_app, name="analysis")
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(topology_app, name="topology")
readable_usage()


def main() -> None:
    """Entry point: the app, with one rule for Ctrl-C and a prompt exit.

    Until the app runs, a SIGINT ends the process quietly (:mod:`wormsim`'s early handler:
    nothing was created). From then on it is a ``KeyboardInterrupt``: a run directory that
    was complete before it is kept (status 0, and the command says so), anything else is
    removed (status 130; :func:`wormsim.clikit.interrupted`). A SIGINT after the command
    finished is ignored while the interpreter tears down, which can take seconds after a run
    that compiled the kernels; an interrupted process leaves at once.
    """
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        app()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
        # Typer turns a KeyboardInterrupt that escaped every command into a silent exit 130
        if code == EXIT_INTERRUPTED and isinstance(_cause(exc), KeyboardInterrupt):
            code = interrupted()
    except KeyboardInterrupt:
        code = interrupted()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdout.flush()
    sys.stderr.flush()
    if code == EXIT_INTERRUPTED:
        os._exit(EXIT_INTERRUPTED)
    sys.exit(code)


def _cause(exc: BaseException) -> BaseException | None:
    """The exception at the bottom of ``exc``'s chain of causes and contexts, stopping where a
    handler already dealt with it (``raise … from None``)."""
    seen = exc
    while True:
        nxt = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
        if nxt is None:
            break
        seen = nxt
    return seen if seen is not exc else None


if __name__ == "__main__":  # pragma: no cover
    main()
