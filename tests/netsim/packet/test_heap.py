"""The event heap (``heap.py``) against Python's ``heapq``: events pop in ``(time, seq)`` order,
``seq`` being drawn when an event is scheduled, so events of the same time pop in the order they
were scheduled (the engine's determinism rule), under random interleavings of pushes, pops,
replace-tops and owner shifts (seeded)."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from wormsim.netsim.packet.heap import (
    C_HEAPN,
    C_SEQ,
    collapse_events,
    heap_is_valid,
    heap_pop,
    heap_push,
    heap_push_seq,
    heap_replace_top,
    heapify,
    shift_events,
)


class Heap:
    """The four heap arrays and the ``[size, next_seq]`` counters, as in ``State``."""

    def __init__(self, cap: int = 4096):
        self.hc = np.zeros(2, np.int64)
        self.ht = np.zeros(cap, np.int64)
        self.hs = np.zeros(cap, np.int64)
        self.he = np.zeros(cap, np.int64)
        self.ho = np.zeros(cap, np.int32)

    @property
    def arrays(self):
        return self.hc, self.ht, self.hs, self.he, self.ho

    def push(self, t: int, etype: int, arg: int, owner: int) -> int:
        """Schedule an event; returns the sequence number it drew."""
        seq = int(self.hc[C_SEQ])
        heap_push(*self.arrays, t, etype, arg, owner)
        return seq

    def pop(self) -> tuple[int, int, int]:
        t, e, o = heap_pop(*self.arrays)
        return int(t), int(e), int(o)

    def __len__(self) -> int:
        return int(self.hc[C_HEAPN])

    def valid(self) -> bool:
        return bool(heap_is_valid(self.hc, self.ht, self.hs))


def test_same_time_events_pop_in_the_order_they_were_scheduled():
    h = Heap()
    for arg in range(10):
        h.push(500, 1, arg, 0)
    h.push(400, 2, 99, 0)
    out = [h.pop() for _ in range(11)]
    assert out[0] == (400, 2 | 99 << 8, 0)
    assert [e >> 8 for _, e, _ in out[1:]] == list(range(10))


def test_an_earlier_drawn_sequence_number_goes_first():
    """``heap_push_seq``: an event whose sequence number was drawn before others of the same time
    (a link's next packet in flight, a switch's transmit-complete) pops before them."""
    h = Heap()
    early = int(h.hc[C_SEQ])
    h.hc[C_SEQ] += 1  # drawn now, pushed later
    h.push(100, 1, 1, 0)
    h.push(100, 1, 2, 0)
    heap_push_seq(*h.arrays, 100, early, 1 | 7 << 8, 3)
    assert [h.pop()[1] >> 8 for _ in range(3)] == [7, 1, 2]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_pushes_pops_and_replaces_match_heapq(seed: int):
    rng = np.random.default_rng(seed)
    h = Heap()
    ref: list[tuple[int, int, int, int]] = []  # (time, seq, code, owner)
    now = 0
    for _ in range(20_000):
        op = rng.random()
        if op < 0.5 or not ref:
            t = now + int(rng.integers(0, 50))  # few distinct times: many ties
            etype, arg, owner = (
                int(rng.integers(14)),
                int(rng.integers(1 << 20)),
                int(rng.integers(-1, 64)),
            )
            seq = h.push(t, etype, arg, owner)
            heapq.heappush(ref, (t, seq, etype | arg << 8, owner))
        elif op < 0.8:
            t, code, owner = h.pop()
            rt, _, rcode, rowner = heapq.heappop(ref)
            assert (t, code, owner) == (rt, rcode, rowner)
            now = t
        else:  # pop the top and push in one pass (the event loop's link arrivals)
            rt, _, rcode, rowner = heapq.heappop(ref)
            assert (int(h.ht[0]), int(h.he[0]), int(h.ho[0])) == (rt, rcode, rowner)
            t = rt + int(rng.integers(0, 50))
            seq = int(h.hc[C_SEQ])
            h.hc[C_SEQ] += 1
            heap_replace_top(*h.arrays, t, seq, 1 | 5 << 8, 2)
            heapq.heappush(ref, (t, seq, 1 | 5 << 8, 2))
            now = rt
        assert len(h) == len(ref)
    assert h.valid()
    while ref:
        rt, _, rcode, rowner = heapq.heappop(ref)
        assert h.pop() == (rt, rcode, rowner)
    assert len(h) == 0


def _owned_events(rng, churn: int = 0) -> tuple[Heap, dict[int, tuple[int, int, int]]]:
    """A heap of 2,000 events with random times and owners (-1 .. 31), then ``churn`` pops and
    pushes (a heap that is not just pushed in order); returns it and its live events,
    ``index -> (time, seq, owner)`` (the index is the event's argument)."""
    h = Heap()
    events = {}

    def push() -> None:
        t, owner = int(rng.integers(0, 10_000)), int(rng.integers(-1, 32))
        events[len(events)] = (t, h.push(t, 3, len(events), owner), owner)

    for _ in range(2000):
        push()
    for _ in range(churn):
        h.pop()
        push()
    live = {int(e) >> 8 for e in h.he[: len(h)]}
    return h, {i: ev for i, ev in events.items() if i in live}


@pytest.mark.parametrize("dt", [2_500, -2_500, 0])
@pytest.mark.parametrize("seed", [0, 1])
def test_shifting_owners_keeps_the_order_of_shifted_times(seed: int, dt: int):
    """``shift_events`` adds dt (later or earlier) to the events of the masked owners (never to
    owner -1), sifting each into place; the pops then follow ``(time + shift, seq)``."""
    rng = np.random.default_rng(seed)
    h, events = _owned_events(rng, churn=500)
    mask = rng.random(32) < 0.4
    moved = sum(1 for _, _, o in events.values() if o >= 0 and mask[o])
    assert shift_events(*h.arrays, mask, dt) == moved
    assert h.valid()
    ref = sorted((t + (dt if o >= 0 and mask[o] else 0), s, i) for i, (t, s, o) in events.items())
    got = [h.pop() for _ in range(len(ref))]
    assert [(t, e >> 8) for t, e, _ in got] == [(t, i) for t, _, i in ref]


@pytest.mark.parametrize("seed", [0, 1])
def test_collapsing_owners_runs_their_late_events_first_at_that_time(seed: int):
    """``collapse_events`` moves the masked owners' events later than ``t`` to ``t``, sifting
    each up; the pops then follow ``(min(time, t), seq)``."""
    rng = np.random.default_rng(seed)
    h, events = _owned_events(rng)
    mask = rng.random(32) < 0.4
    t_to = 4_000
    moved = sum(1 for t, _, o in events.values() if o >= 0 and mask[o] and t > t_to)
    assert collapse_events(*h.arrays, mask, t_to) == moved
    assert h.valid()
    ref = sorted(
        (min(t, t_to) if o >= 0 and mask[o] else t, s, i) for i, (t, s, o) in events.items()
    )
    got = [h.pop() for _ in range(len(ref))]
    assert [(t, e >> 8) for t, e, _ in got] == [(t, i) for t, _, i in ref]


def test_heapify_orders_any_array_and_the_validity_check_can_fail():
    rng = np.random.default_rng(3)
    h = Heap()
    n = 1000
    h.ht[:n] = rng.integers(0, 100, n)
    h.hs[:n] = rng.permutation(n)
    h.he[:n] = np.arange(n)
    h.hc[C_HEAPN] = n
    assert not h.valid()  # random arrays are (almost surely) not a heap
    heapify(*h.arrays)
    assert h.valid()
    ref = sorted(zip(h.ht[:n].tolist(), h.hs[:n].tolist(), h.he[:n].tolist(), strict=True))
    assert [h.pop()[:2] for _ in range(n)] == [(t, e) for t, _, e in ref]
    # a root larger than a child is caught
    for t in (5, 1, 3):
        h.push(t, 0, 0, 0)
    h.ht[0], h.ht[2] = h.ht[2], h.ht[0]
    assert not h.valid()
