"""Every command a user can type answers ``--help`` (exit 0, usage shown, no traceback)."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from wormsim.cli import app


def _paths(command: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, sub in getattr(command, "commands", {}).items():
        out += _paths(sub, (*prefix, name))
    return out


COMMANDS = _paths(typer.main.get_command(app))


def test_the_command_tree_is_complete():
    names = {" ".join(p) for p in COMMANDS}
    for expected in (
        "workload build",
        "workload import",
        "collective expand",
        "netsim run",
        "memo stats",
        "memo clear",
        "analysis compare",
        "pipeline run",
        "pipeline schema",
        "topology export",
        "topology show",
    ):
        assert expected in names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "wormsim")
def test_help(path: tuple[str, ...]):
    r = CliRunner().invoke(app, [*path, "--help"])
    assert r.exit_code == 0, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "Usage" in r.output and "--help" in r.output
