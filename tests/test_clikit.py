"""What every command shares (:mod:`wormsim.clikit`): Ctrl-C stops a long run within a second
wherever its stderr goes, exits 130 and leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_stops_a_packet_run_with_stderr_a_pipe(tmp_path):
    """A packet-mode run whose stderr is a pipe (a batch log, a notebook kernel): SIGINT once
    the engine is running ends it within a second, exit 130, and no run directory remains."""
    out = tmp_path / "run"
    env = {**os.environ, "WORMSIM_PROGRESS_INTERVAL": "0.2"}
    cmd = [sys.executable, "-m", "wormsim", "pipeline", "run", str(ROOT / "examples/default.yaml")]
    proc = subprocess.Popen(
        [*cmd, "--mode", "packet", "-o", str(out)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # as from a terminal: SIGINT at its default, so Python installs its handler (a test run
        # started as a background job of a non-interactive shell would pass SIGINT on ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    watchdog = threading.Timer(900, proc.kill)  # a hung run fails the test instead of CI
    watchdog.start()
    seen = []
    for line in proc.stderr:  # the first progress line: the kernel is running
        seen.append(line)
        if line.startswith("packet simulation:"):
            break
    else:
        pytest.fail(f"no progress line on a piped stderr: {''.join(seen)}")
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    rc = proc.wait(timeout=30)
    waited = time.perf_counter() - t0
    watchdog.cancel()
    assert rc == 130, (rc, rest)
    assert waited < 1.0, f"took {waited:.2f} s to stop"
    assert "interrupted" in rest and "Traceback" not in rest
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no staging directory either
