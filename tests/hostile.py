"""Helpers of the hostile-input tests: run the ``wormsim`` CLI and check a clean refusal."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner, Result

from wormsim.cli import app

__all__ = ["invoke", "assert_rejected"]


def invoke(*args: object) -> Result:
    """Run ``wormsim ARGS…`` in-process."""
    return CliRunner().invoke(app, [str(a) for a in args])


def assert_rejected(result: Result, *needles: str, out: Path | None = None) -> str:
    """Exit 2 with ``error: …`` naming every needle, no traceback, nothing written to ``out``.

    Returns the message, for further checks.
    """
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, result.output
    text = result.output
    assert "error:" in text and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, f"{needle!r} not in {text!r}"
    if out is not None:
        assert not Path(out).exists(), f"{out} was written"
    return text
