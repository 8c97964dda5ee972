"""Ctrl-C at any moment of ``wormsim pipeline run``: no traceback, and one rule. A run directory
that was complete before the signal is kept (exit 0, and the command says so); otherwise
nothing is left at the target, not even the staging directory (exit 130)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.pipelines.conftest import TINY

ROOT = Path(__file__).resolve().parents[1]


def _start(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump({**TINY, "sim": {"mode": "flow"}}))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "wormsim", "pipeline", "run", str(exp), "-o", str(out),
           "--no-alone", "-q"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, out


def _check(proc: subprocess.Popen, out: Path) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)
    text = err.decode()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".run.")]
    assert not leftovers, leftovers
    if proc.returncode == 0:
        assert (out / "summary.json").is_file() and (out / "report" / "report.md").is_file()
    else:
        assert proc.returncode == 130, text
        assert not out.exists()
        assert text.startswith("error: interrupted"), text
        assert text.count("interrupted") == 1, text  # said once
    return proc.returncode, text


@pytest.mark.parametrize("delay", [0.2, 0.5, 1.0])
def test_sigint_early_leaves_no_traceback_and_nothing_behind(tmp_path: Path, delay: float):
    proc, out = _start(tmp_path)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    code, _ = _check(proc, out)
    assert code == 130  # the run cannot be complete this early


def _wait_for(predicate, timeout: float = 90.0) -> None:
    t0 = time.monotonic()
    while not predicate():
        assert time.monotonic() - t0 < timeout
        time.sleep(0.02)


def test_sigint_mid_run_removes_the_partial_run(tmp_path: Path):
    proc, out = _start(tmp_path)
    _wait_for(lambda: any(p.name.startswith(".run.") for p in tmp_path.iterdir()))
    proc.send_signal(signal.SIGINT)
    code, _ = _check(proc, out)
    assert code == 130


def test_sigint_after_the_run_is_complete_keeps_it_and_exits_0(tmp_path: Path):
    proc, out = _start(tmp_path)
    _wait_for(lambda: out.exists() or proc.poll() is not None)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    code, text = _check(proc, out)
    assert code == 0
    assert "Traceback" not in text
