"""Progress of long steps, in every setting a run lives in.

- a terminal: a tqdm bar with rate and ETA on stderr;
- Jupyter: a notebook bar (``tqdm.notebook``, when ipywidgets is installed; otherwise the text
  bar, which notebooks render too);
- anything else (a pipe, ``nohup``, a SLURM or Ray log): one plain line every
  :data:`LINE_INTERVAL_S` seconds, so a batch log shows that a run is alive, e.g.
  ``packet simulation:  42% | 1,024/2,431 nodes | sim 12.3 ms, 1.2 M events/s | 0:40<0:55``.

tqdm computes rates and ETAs; this module only picks the display and rate-limits it.
:func:`set_enabled` (the CLI's ``wormsim --quiet``) turns every display off. A step nested in a
counted step (the simulations of the report's "alone" replay, one per collective) stays silent:
the outer bar already says how far the step is.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, TextIO, TypeVar

from tqdm import tqdm as _std_tqdm

from wormsim.humanize import human_count, human_time
from wormsim.units import PS_PER_S_F

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "LINE_INTERVAL_S",
    "Task",
    "set_enabled",
    "enabled",
    "muted",
    "task",
    "stage",
    "staged",
    "expected",
    "engine_task",
]

LINE_INTERVAL_S = float(os.environ.get("WORMSIM_PROGRESS_INTERVAL", "5"))
"""Seconds between two progress lines when stderr is not a terminal (environment variable
``WORMSIM_PROGRESS_INTERVAL``)."""

_state: dict[str, Any] = {"enabled": os.environ.get("WORMSIM_QUIET", "") in ("", "0"), "mute": 0}


def set_enabled(on: bool) -> None:
    """Turn every progress display on or off (``wormsim --quiet`` turns it off)."""
    _state["enabled"] = bool(on)


def enabled() -> bool:
    """Whether progress is shown (and not muted by an enclosing counted step)."""
    return bool(_state["enabled"]) and _state["mute"] == 0


@contextmanager
def muted() -> Iterator[None]:
    """No display from steps started inside the block (a sweep point in a worker)."""
    _state["mute"] += 1
    try:
        yield
    finally:
        _state["mute"] -= 1


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _Lines:
    """A file for tqdm that turns its carriage-return refreshes into whole lines."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, s: str) -> None:
        s = _ANSI.sub("", s.replace("\r", "")).strip()
        if s:
            self.stream.write(s + "\n")

    def flush(self) -> None:
        self.stream.flush()


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None else None  # type: ignore[attr-defined]
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _columns(stream: TextIO) -> int:
    """The terminal's width (0 for a terminal that reports none, as some ptys do)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 0


def _bar(label: str, total: int | None, unit: str, stream: TextIO | None, interval: float):
    """The tqdm bar for this setting."""
    stream = stream if stream is not None else sys.stderr
    common: dict[str, Any] = dict(desc=label, total=total, unit=f" {unit}", unit_scale=False)
    if total is None:
        common["bar_format"] = "{desc} | {elapsed} elapsed{postfix}"
    if stream is sys.stderr and _in_notebook():
        try:
            import ipywidgets  # noqa: F401
            from tqdm.notebook import tqdm as nb_tqdm

            return nb_tqdm(delay=1.0, **common)
        except ImportError:  # a text bar; no cursor moves, which notebooks do not interpret
            text = {"ncols": 100, "nrows": 50, "position": 0}
            return _std_tqdm(file=sys.stderr, mininterval=0.5, delay=1.0, **text, **common)
    if getattr(stream, "isatty", lambda: False)():
        width = {"dynamic_ncols": True} if _columns(stream) else {"ncols": 100, "nrows": 50}
        return _std_tqdm(file=stream, mininterval=0.2, delay=0.5, **width, **common)
    common.pop("bar_format", None)
    fmt = "{desc}: {percentage:3.0f}% | {n_fmt}/{total_fmt} " + unit + "{postfix} | "
    fmt += "{elapsed} elapsed, ETA {remaining}"
    if total is None:
        fmt = "{desc} | {elapsed} elapsed{postfix}"
    return _std_tqdm(
        file=_Lines(stream),
        mininterval=interval,
        maxinterval=interval,
        miniters=1,
        delay=interval,
        position=0,  # no cursor moves for nested steps: every line stands alone
        bar_format=fmt,
        **common,
    )


class Task:
    """One step's display: ``update(done, **facts)`` sets how far it is (no-op when off)."""

    def __init__(self, bar: Any = None, stream: TextIO | None = None) -> None:
        self.bar = bar
        self.stream = stream

    def write(self, line: str) -> None:
        """Print a line of results to stderr without breaking the bar (shown or not)."""
        stream = self.stream if self.stream is not None else sys.stderr
        if self.bar is not None and hasattr(self.bar, "write"):
            self.bar.write(line, file=stream)
        else:
            print(line, file=stream, flush=True)

    def update(self, done: int, **facts: str) -> None:
        """Set the units done and the facts shown after the count."""
        if self.bar is None:
            return
        if facts:
            self.bar.set_postfix_str(", ".join(facts.values()), refresh=False)
        self.bar.update(done - self.bar.n)


@contextmanager
def task(
    label: str,
    total: int | None,
    unit: str = "",
    *,
    mute_inner: bool = False,
    stream: TextIO | None = None,
    interval: float | None = None,
) -> Iterator[Task]:
    """Show a step of ``total`` units (``None``: unknown) while the block runs.

    Parameters
    ----------
    label, total, unit : what the display says (``packet simulation``, 2431, ``nodes``).
    mute_inner : steps started inside this one stay silent (a loop of simulations).
    stream : where lines go (default stderr; tests pass a buffer).
    interval : seconds between lines when ``stream`` is not a terminal (default
        :data:`LINE_INTERVAL_S`, read at the call).
    """
    interval = LINE_INTERVAL_S if interval is None else interval
    bar = _bar(label, total, unit, stream, interval) if enabled() else None
    _state["mute"] += int(mute_inner)
    try:
        yield Task(bar, stream)
    finally:
        _state["mute"] -= int(mute_inner)
        if bar is not None:
            bar.close()


@contextmanager
def expected(seconds: dict[str, float]) -> Iterator[None]:
    """Inside the block, a :func:`stage` whose label starts with a key (``"collective"``) shows
    how long it has left by the expected seconds (a large run's estimate,
    :func:`wormsim.workload.scale.estimate_seconds`)."""
    old = _state.get("expect", {})
    _state["expect"] = {**old, **seconds}
    try:
        yield
    finally:
        _state["expect"] = old


def _expected_for(label: str) -> float | None:
    for key, seconds in _state.get("expect", {}).items():
        if label.startswith(key):
            return float(seconds)
    return None


def _left(expect: float, elapsed: float) -> str:
    left = expect - elapsed
    if left <= 0:
        return f"over the {human_time(expect * PS_PER_S_F, 2)} expected"
    return f"about {human_time(left * PS_PER_S_F, 2)} left"


@contextmanager
def stage(label: str, *, stream: TextIO | None = None, interval: float | None = None):
    """Show that a step without a count (building ops, expanding collectives, writing a
    report) is alive: elapsed time, refreshed from a background thread, and the time left when
    the step's duration is expected (:func:`expected`)."""
    expect = _expected_for(label)
    interval = LINE_INTERVAL_S if interval is None else interval
    with task(label, None, "", stream=stream, interval=interval) as t:
        stop = threading.Event()
        if t.bar is not None:
            start = time.perf_counter()
            if expect is not None:
                t.bar.set_postfix_str(_left(expect, 0.0), refresh=False)

            def tick() -> None:
                bar = t.bar
                while not stop.wait(min(max(interval, 0.01), 1.0)):
                    if expect is not None:
                        left = _left(expect, time.perf_counter() - start)
                        bar.set_postfix_str(left, refresh=False)
                    shown = max(bar.last_print_t, bar.start_t + bar.delay)
                    if time.time() - shown >= bar.mininterval:
                        bar.refresh()

            threading.Thread(target=tick, daemon=True).start()
        try:
            yield t
        finally:
            stop.set()


def staged(label: str) -> Callable[[F], F]:
    """Decorate a stage function so it runs inside :func:`stage` ``(label)``."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with stage(label):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return wrap


@contextmanager
def engine_task(label: str, total_nodes: int, **kw: Any) -> Iterator[Any]:
    """A ``progress(sim_time_ps, nodes_done, events)`` callback for an engine run, or ``None``
    when progress is off; shows the share of DAG nodes done, simulated time and events/s.

    The display opens at the first call, after the kernels compiled, so elapsed time, rate and
    ETA are those of the simulation itself.
    """
    if not enabled():
        yield None
        return
    with ExitStack() as stack:
        shown: list[Any] = []  # the task, and (time, events) at its first call

        def update(sim_ps: int, done: int, events: int) -> None:
            now = time.perf_counter()
            if not shown:
                shown.extend((stack.enter_context(task(label, total_nodes, "nodes", **kw)), now))
                shown.append(events)
            rate = (events - shown[2]) / max(now - shown[1], 1e-9)
            facts = {"sim": f"sim {human_time(sim_ps)}", "ev": f"{human_count(rate)} events/s"}
            shown[0].update(done, **facts)

        yield update
