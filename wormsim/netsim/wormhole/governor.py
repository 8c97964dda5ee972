"""When memo lookups stop paying, pause them: the memo bridge's governor.

A memo lookup costs the bridge a fraction of a millisecond of Python (the partition's key, a
store probe, often its canonical form); a hit or a partition parked behind a same-tick leader
saves the packets of a transient. Where contention patterns never repeat (a data-parallel ring
coupled to another stage's on shared uplinks re-forms into a new pattern at every step) the
lookups are nearly all misses and the run is slower than packet mode. The governor counts, per
window of lookups, the packets the memo saved against the lookups it made; when a window yields
less than a lookup costs, and the run's memo as a whole has not paid either, the next partitions
form without a lookup (their fast-forward from steady state is unchanged), for a pause that
doubles while the windows keep failing and resets when one pays.

Every decision is made from counts, never from wall time, so a run's results depend only on its
inputs and the memo store's snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MemoGovernor"]


@dataclass
class MemoGovernor:
    """Decides when the memo bridge pauses its lookups.

    Parameters
    ----------
    window : int
        Lookups per decision.
    min_yield_packets : float
        Packets a lookup must save on average to pay for itself: a lookup costs about as much
        wall time as the packet engine spends on this many data packets (measured on the
        generalization suite, see ``docs/wormhole.md``).
    learn_windows : int
        Windows before the first pause: a cold store misses until it has learned.
    first_pause, max_pause : int
        Partitions formed without a lookup after the first failing window, and the bound of the
        doubling.

    Attributes
    ----------
    lookups, saved_packets : int, float
        Over the whole run: lookups made and packets their hits and parks saved.
    pauses, paused_partitions : int
        Pauses decided and the partitions they cover.
    """

    window: int = 128
    min_yield_packets: float = 64.0
    learn_windows: int = 4
    first_pause: int = 256
    max_pause: int = 16384
    lookups: int = 0
    saved_packets: float = 0.0
    pauses: int = 0
    paused_partitions: int = 0
    _win_lookups: int = field(default=0, repr=False)
    _win_saved: float = field(default=0.0, repr=False)
    _next_pause: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        self._next_pause = self.first_pause

    def observe(self, saved_packets: float = 0.0) -> int:
        """Count one lookup that saved ``saved_packets``; return the partitions to form without
        a lookup from now on (0: keep looking up)."""
        self.lookups += 1
        self._win_lookups += 1
        self.saved_packets += saved_packets
        self._win_saved += saved_packets
        if self._win_lookups < self.window:
            return 0
        paid = self._win_saved >= self.min_yield_packets * self._win_lookups
        self._win_lookups, self._win_saved = 0, 0.0
        overall = self.saved_packets >= self.min_yield_packets * self.lookups
        if paid or overall or self.lookups < self.learn_windows * self.window:
            self._next_pause = self.first_pause
            return 0
        pause = self._next_pause
        self._next_pause = min(2 * pause, self.max_pause)
        self.pauses += 1
        self.paused_partitions += pause
        return pause

    def settings(self) -> dict[str, float]:
        """The governor's settings, for ``summary.json``."""
        return {
            "window_lookups": self.window,
            "min_yield_packets": self.min_yield_packets,
            "learn_windows": self.learn_windows,
            "first_pause": self.first_pause,
            "max_pause": self.max_pause,
        }
