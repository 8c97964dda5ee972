"""Progress shows in every setting: lines when stderr is not a terminal, rate-limited."""

from __future__ import annotations

import io
import re
import time

import pytest

from wormsim import progress

from .pipelines.conftest import invoke
from .pipelines.conftest import tiny as tiny  # the fixture


@pytest.fixture(autouse=True)
def _on():
    progress.set_enabled(True)
    yield
    progress.set_enabled(True)


def test_lines_when_not_a_terminal_are_rate_limited():
    buf = io.StringIO()
    t0 = time.perf_counter()
    with progress.engine_task("packet simulation", 1000, stream=buf, interval=0.2) as cb:
        assert cb is not None
        for i in range(200):  # 200 updates over about 1 s
            cb(i * 1_000_000, (i + 1) * 5, i * 10_000)
            time.sleep(0.005)
    wall = time.perf_counter() - t0
    lines = buf.getvalue().splitlines()
    assert 2 <= len(lines) <= wall / 0.2 + 2  # a line every interval, not one per update
    assert all("\r" not in line and "\x1b" not in line for line in lines)
    last = lines[-1]
    assert last.startswith("packet simulation: 100%") and "1000/1000 nodes" in last
    assert "sim " in last and "events/s" in last and "ETA" in last  # the facts of a log line
    assert "e+" not in buf.getvalue()


def test_short_steps_print_nothing():
    buf = io.StringIO()
    with progress.task("quick", 10, "nodes", stream=buf, interval=5.0) as t:
        t.update(10)
    assert buf.getvalue() == ""


def test_quiet_turns_every_display_off():
    progress.set_enabled(False)
    with progress.engine_task("x", 10) as cb:
        assert cb is None
    buf = io.StringIO()
    with progress.task("x", 10, stream=buf, interval=0.0) as t:
        t.update(5)
    assert buf.getvalue() == ""


def test_steps_inside_a_counted_loop_stay_silent():
    buf = io.StringIO()
    with progress.task("sweep", 2, "points", mute_inner=True, stream=buf, interval=0.0):
        with progress.engine_task("flow simulation", 10) as cb:
            assert cb is None
    assert progress.enabled()


def test_a_stage_without_a_count_says_it_is_alive():
    buf = io.StringIO()
    with progress.stage("workload: building ops", stream=buf, interval=0.1):
        time.sleep(0.45)
    lines = buf.getvalue().splitlines()
    assert 1 <= len(lines) <= 6
    assert all(line.startswith("workload: building ops | ") for line in lines)


def test_a_stage_with_an_expected_duration_says_how_long_it_has_left():
    buf = io.StringIO()
    with progress.expected({"collective": 100.0}):
        with progress.stage("collective: expanding into flows", stream=buf, interval=0.1):
            time.sleep(0.45)
        with progress.stage("workload: building ops", stream=buf, interval=0.1):
            time.sleep(0.25)
    lines = buf.getvalue().splitlines()
    coll = [line for line in lines if line.startswith("collective")]
    assert coll and all(re.search(r"about [\d.,]+ s left", line) for line in coll), lines
    assert all("left" not in line for line in lines if line.startswith("workload"))
    with progress.expected({"collective": 0.1}):
        buf = io.StringIO()
        with progress.stage("collective: expanding into flows", stream=buf, interval=0.1):
            time.sleep(0.45)
    assert "over the 100 ms expected" in buf.getvalue()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_eta():
    term = _Terminal()
    with progress.task("packet simulation", 100, "nodes", stream=term) as t:
        for i in range(100):
            t.update(i + 1)
            time.sleep(0.008)
    frames = [f for f in term.getvalue().split("\r") if f.strip()]
    assert len(frames) >= 2 and all("packet simulation:" in f for f in frames)
    assert "|" in frames[-1] and "100/100" in frames[-1]
    assert "<" in frames[1] and " nodes/s" in frames[1]  # elapsed<remaining, the rate


def test_every_stage_of_a_flow_mode_pipeline_run_shows_itself(tmp_path, tiny, monkeypatch):
    """Each stage that has no count of its own (``STAGE_SECONDS``: building ops, expanding
    collectives, the flow engine's build, the report) shows a line of its own in a pipeline run,
    so a large run is never silent between two counted steps."""
    from wormsim.workload.scale import STAGE_SECONDS

    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)  # every stage prints at once
    r = invoke("pipeline", "run", tiny, "-o", tmp_path / "run", "--mode", "flow")
    assert r.exit_code == 0, r.output
    shown = {line.split(" | ")[0].split(":  ")[0] for line in r.output.splitlines()}
    for label in STAGE_SECONDS:
        assert any(s.startswith(label) for s in shown), (label, sorted(shown))
