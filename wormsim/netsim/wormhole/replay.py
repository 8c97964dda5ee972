"""Memo lookups and the replay of hits: the per-run answer cache (:class:`Lookups`) and the
start-up correction that moves a transient's bytes between flows of different ages
(:func:`aged`)."""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from wormsim.memo import MemoSession, canonical_form
from wormsim.netsim.wormhole.keys import PartitionKeys
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["Cached", "Miss", "Lookups", "START_UP_RTTS", "young", "aged"]

START_UP_RTTS = 2.0
"""A flow is in its start-up while younger than this many base RTTs (plus the sample period
its partition may take to form): the flows of a ring step start over several sampler ticks
and share one start-up. On GPT-7B/64 on a k=8 fat-tree under DCTCP at 0.1 size (packet mode's
own floor: 0.02 % mean fabric-flow FCT, 0.004 % iteration), one period alone: 1.60 % / 1.11 %;
1 RTT: 0.18 / 0.04 %; 2 RTTs: 0.20 / 0.06 %; a whole steadiness window (100 us): 0.18 / 0.19 %
(flows with 20-100 us of another pattern behind them replayed as if they had just started)."""


class Cached(NamedTuple):
    """A stored transient in a partition's own flow order."""

    entry_id: int
    sizef: np.ndarray
    rend: np.ndarray  # bytes/ps
    t_conv_ps: int
    ccs: np.ndarray  # per flow, the CC state a replay restores (no columns when none)


class Miss(NamedTuple):
    """A lookup that found nothing, and the store bucket it searched."""

    bucket: tuple


class Lookups:
    """Lookups of one run, through a cache keyed by the partition's *labelled* FCG.

    Within a run the same contention pattern recurs thousands of times with the same labelling,
    and a cached answer needs neither the canonical form nor a match. A cached miss is
    forgotten when this run inserts an entry into the store bucket it searched
    (:meth:`forget_bucket`: no other entry can turn it into a hit); hits served from the cache
    are counted (:attr:`cached_hits`) for the store's hit counts.

    Parameters
    ----------
    session : MemoSession
        The run's view of the memo store.
    keys : PartitionKeys
        How partitions are keyed.
    """

    def __init__(self, session: MemoSession, keys: PartitionKeys) -> None:
        self.session = session
        self.keys = keys
        self._cache: dict[tuple, Cached | Miss] = {}
        self._missed: dict[tuple, list[tuple]] = {}  # store bucket -> keys cached as misses
        self.cached_hits: Counter[int] = Counter()

    def find(
        self, A: dict[str, np.ndarray], qs: np.ndarray, key: tuple, weights: np.ndarray
    ) -> Cached | Miss:
        """The answer for partition ``qs`` (flows in its own order) of labelled key ``key``,
        its vertex ``weights`` already computed."""
        found = self._cache.get(key)
        if isinstance(found, Cached):
            self.cached_hits[found.entry_id] += 1
        elif found is None and not self.session.holds(bucket := self.keys.bucket(key)):
            # most lookups of a run that keeps meeting new patterns: nothing to match, so no
            # graph to build (the FCG and its canonical form were 3/4 of the bridge's time)
            found = Miss(bucket)
            self._missed.setdefault(bucket, []).append(key)
            self._cache[key] = found
        elif found is None:
            fcg = self.keys.fcg(A, qs, weights)
            cf = canonical_form(fcg)
            hit = self.session.lookup(fcg, cf)
            if hit is None:
                found = Miss(self.session.bucket(fcg, cf))
                self._missed.setdefault(found.bucket, []).append(key)
            else:
                found = Cached(
                    hit.entry_id,
                    np.array([hit.sent_bytes[q] for q in qs.tolist()], np.int64),
                    np.array([hit.end_rates_bps[q] for q in qs.tolist()]) / BPS_PER_BYTE_PER_PS,
                    int(hit.t_conv_ps),
                    np.array([hit.cc_state[q] for q in qs.tolist()], np.float64)
                    if hit.cc_state
                    else np.zeros((qs.size, 0)),
                )
            self._cache[key] = found
        return found  # type: ignore[return-value]

    def forget_bucket(self, bucket: tuple) -> None:
        """An entry was stored in ``bucket``: the misses cached from it may now hit."""
        for key in self._missed.pop(bucket, ()):
            del self._cache[key]


def young(A: dict[str, np.ndarray], r: int, qs: np.ndarray, period_ps: int) -> np.ndarray:
    """Which flows of partition ``r`` were younger than :data:`START_UP_RTTS` base RTTs plus
    a sample period (``period_ps``) when it formed."""
    qs64 = np.asarray(qs, np.int64)
    age = A["wh_tform_ps"][r] - A["qp_start_ps"][qs64]
    return age < START_UP_RTTS * A["wh_rtt_ps"][qs64] + period_ps


def aged(
    A: dict[str, np.ndarray], r: int, qs: np.ndarray, sizef: np.ndarray, rend: np.ndarray,
    sign: int, starting: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Transient bytes ``sizef`` of partition ``r``'s flows moved to or from flow age 0.

    A partition forms at a sampler tick after its flows start, so a flow is already ``a``
    into its transient at the tick, with ``u`` bytes acknowledged. Past the transient a
    flow has acknowledged ``R t - D`` bytes at age ``t`` (``D``: what its start-up cost),
    so the bytes from the tick to age ``a + T`` are ``R (a + T) - D - u``: they depend on
    ``a`` and ``u``. Replaying one flow's ``Size_f`` onto another of a different phase left
    it behind by ``R (a' - a) - (u' - u)`` (every replayed ring step of GPT-7B/64 on a k=8
    fat-tree under DCTCP finished 8 us late). Entries keep ``Size_f + u - R a``
    (``sign = -1``), a hit replays ``that + R a' - u'`` (``+1``), for the flows
    ``starting`` marks (in their start-up, judged when the partition formed, on both
    sides). The flows of a ring step start over several sampler ticks and their partition
    re-forms as they join: judged by one sample period alone, the flows already 5-20 us
    old at the hit were replayed from age 0 and that fat-tree run ended 1.1 % late.

    A hit also resumes the flow with the packets it had in flight at the tick, a start-up
    pipe short of the steady ``R x base RTT`` a skip from steady state keeps: it is
    credited the difference, or it finishes that much late (a flow 0.5 us old at its
    tick: 3.7 us on a 4 us RTT). Other flows are left as they are."""
    qs64 = np.asarray(qs, np.int64)
    age = np.maximum(A["wh_tform_ps"][r] - A["qp_start_ps"][qs64], 0)
    shift = rend * age - A["wh_una0"][qs64]
    if sign > 0:  # a hit also credits the pipe the flow has not filled yet
        flight = A["qp_nxt"][qs64] - A["qp_una"][qs64]
        shift = shift + np.maximum(rend * A["wh_rtt_ps"][qs64] - flight, 0)
    return np.maximum(np.rint(sizef + sign * np.where(starting, shift, 0)), 0).astype(np.int64)
