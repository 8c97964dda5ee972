"""How much work a jitted kernel does per call, so it hands control back to Python often.

Python runs signal handlers (Ctrl-C, a notebook's "interrupt kernel", ``kill -INT``) and progress
callbacks only between kernel calls. Every engine therefore drives its kernel in calls of a
bounded number of events, whether or not progress is shown: :class:`CallBudget` sizes each call
from the measured event rate so that one call lasts about ``target_s`` of wall-clock time. The
kernels stop at the top of their event loop, before taking the next event, so a run split into
calls is bit-identical to one long call.
"""

from __future__ import annotations

import time

__all__ = ["CallBudget"]


class CallBudget:
    """An event budget per kernel call that keeps each call near ``target_s`` seconds.

    Parameters
    ----------
    target_s : float
        Wall-clock time one call should take.
    first : int
        Events in the first call (before any rate is known).
    lo, hi : int
        Bounds on the events of one call.

    Examples
    --------
    >>> b = CallBudget(first=100)
    >>> b.stop(events_now=0)
    100
    """

    def __init__(
        self, target_s: float = 0.1, first: int = 20_000, lo: int = 1_000, hi: int = 1 << 40
    ) -> None:
        self.target_s = target_s
        self.size = first
        self.lo, self.hi = lo, hi
        self._t = time.perf_counter()
        self._ev = 0

    def stop(self, events_now: int) -> int:
        """The event count at which the next call should return (and start its clock)."""
        self._t = time.perf_counter()
        self._ev = int(events_now)
        return self._ev + self.size

    def observe(self, events_now: int) -> None:
        """Resize the budget from the events the last call did and the time it took."""
        done = int(events_now) - self._ev
        wall = time.perf_counter() - self._t
        if done <= 0:
            return
        rate = done / max(wall, 1e-6)
        self.size = int(min(max(rate * self.target_s, self.lo), self.hi, 4 * self.size))
