"""The ``wormsim`` command: one sub-app per stage."""

from __future__ import annotations

import typer

from wormsim.analysis.cli import app as analysis_app
from wormsim.collective.cli import app as collective_app
from wormsim.memo.cli import app as memo_app
from wormsim.netsim.cli import app as netsim_app
from wormsim.pipelines.cli import app as pipeline_app
from wormsim.workload.cli import app as workload_app

__all__ = ["app"]

app = typer.Typer(
    help="wormsim: packet-level network simulation of large-model training.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(workload_app, name="workload")
app.add_typer(collective_app, name="collective")
app.add_typer(netsim_app, name="netsim")
app.add_typer(memo_app, name="memo")
app.add_typer(analysis_app, name="analysis")
app.add_typer(pipeline_app, name="pipeline")


def main() -> None:
    """Entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
