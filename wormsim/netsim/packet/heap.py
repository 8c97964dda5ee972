"""Array heap of events keyed by ``(time, seq)``, with per-event owners.

Shift design (for Wormhole): there is one heap for the whole simulation and every
event carries an *owner*: the egress port it belongs to (``0 .. n_ports-1``: transmit-done,
packet arrival on the link out of that port, NIC wake-up), the QP it belongs to
(``n_ports + qp``: DCQCN timers), or ``-1`` (global: DAG, fluid, sampling; never shifted).
:func:`shift_events` adds ``dt`` to every pending event whose owner is in a boolean mask and
sifts each into place. Sequence numbers are kept, so ties stay deterministic.

An event is ``(time, seq, code, owner)`` with ``code = type | arg << 8``.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit

__all__ = [
    "heap_push",
    "heap_push_seq",
    "heap_pop",
    "heap_replace_top",
    "shift_events",
    "collapse_events",
    "heapify",
    "heap_is_valid",
]

# ``hc[0]``, ``hc[1]``: the heap's size and next sequence number (the packet kernel passes its
# counter array, whose first two rows they are; the flow engine small arrays of its own)
C_HEAPN, C_SEQ = range(2)


# arity. heap_pop, heap_push_seq and heap_replace_top hard-code 2 (shift-based unsigned index
# arithmetic); a 4-ary heap with the bottom-up pop was slower on the k=8 permutation
_D = 2


@njit(cache=True, inline="always")
def _less(ht, hs, i, j):
    return ht[i] < ht[j] or (ht[i] == ht[j] and hs[i] < hs[j])


@njit(cache=True)
def _sift_hole(ht, hs, he, ho, i, n, t, sq, e, o):
    """Place event ``(t, sq, e, o)`` at hole ``i`` and sift it down (moves, not swaps)."""
    while True:
        c = _D * i + 1
        if c >= n:
            break
        m = c
        tm = ht[c]
        sm = hs[c]
        end = c + _D if c + _D <= n else n
        for j in range(c + 1, end):
            tj = ht[j]
            if tj < tm or (tj == tm and hs[j] < sm):
                m = j
                tm = tj
                sm = hs[j]
        if tm < t or (tm == t and sm < sq):
            ht[i] = tm
            hs[i] = sm
            he[i] = he[m]
            ho[i] = ho[m]
            i = m
        else:
            break
    ht[i] = t
    hs[i] = sq
    he[i] = e
    ho[i] = o


@njit(cache=True, inline="always")
def _sift_down(ht, hs, he, ho, i, n):
    _sift_hole(ht, hs, he, ho, i, n, ht[i], hs[i], he[i], ho[i])


@njit(cache=True, inline="always")
def _sift_up(ht, hs, he, ho, i, t, seq, code, owner):
    """Place ``(t, seq, code, owner)`` at hole ``i`` (unsigned) or above it."""
    one = np.uint64(1)
    while i > np.uint64(0):
        p = (i - one) >> one  # _D == 2
        tp = ht[p]
        if t < tp or (t == tp and seq < hs[p]):
            ht[i] = tp
            hs[i] = hs[p]
            he[i] = he[p]
            ho[i] = ho[p]
            i = p
        else:
            break
    ht[i] = t
    hs[i] = seq
    he[i] = code
    ho[i] = owner


@njit(cache=True)
def heap_push_seq(hc, ht, hs, he, ho, t, seq, code, owner):
    """Push an event whose sequence number was drawn earlier (``code = type | arg << 8``)."""
    n = hc[C_HEAPN]
    hc[C_HEAPN] = n + 1
    _sift_up(ht, hs, he, ho, np.uint64(n), t, seq, code, owner)


@njit(cache=True)
def heap_push(hc, ht, hs, he, ho, t, etype, arg, owner):
    """Push an event (``hc`` holds ``[size, next_seq]``)."""
    seq = hc[C_SEQ]
    hc[C_SEQ] = seq + 1
    heap_push_seq(hc, ht, hs, he, ho, t, seq, etype | (arg << 8), owner)


@njit(cache=True)
def heap_pop(hc, ht, hs, he, ho):
    """Pop the earliest event; returns ``(time, code, owner)``."""
    t = ht[0]
    e = he[0]
    o = ho[0]
    n = hc[C_HEAPN] - 1
    hc[C_HEAPN] = n
    if n > 0:
        # bottom-up ("Floyd") deletion: the last event replaces the top (see heap_replace_top)
        heap_replace_top(hc, ht, hs, he, ho, ht[n], hs[n], he[n], ho[n])
    return t, e, o


@njit(cache=True)
def heap_replace_top(hc, ht, hs, he, ho, t, seq, code, owner):
    """Pop the earliest event (already read by the caller) and push ``(t, seq, code, owner)`` in
    one pass: the hole at the root walks down to a leaf along the smaller children (one comparison
    per level), then the new event sifts up from there; it usually belongs near the bottom, so
    this beats sifting down from the root (two comparisons per level). Unsigned indices keep
    numba's negative-index wraparound code out of the loops."""
    un = np.uint64(hc[C_HEAPN])
    one = np.uint64(1)
    i = np.uint64(0)
    c = one
    while c < un:
        c1 = c + one
        if c1 < un:
            t1 = ht[c1]
            t0 = ht[c]
            if t1 < t0 or (t1 == t0 and hs[c1] < hs[c]):
                c = c1
        ht[i] = ht[c]
        hs[i] = hs[c]
        he[i] = he[c]
        ho[i] = ho[c]
        i = c
        c = c + c + one
    _sift_up(ht, hs, he, ho, i, t, seq, code, owner)


@njit(cache=True)
def shift_events(hc, ht, hs, he, ho, owner_mask, dt):
    """Add ``dt`` to every pending event whose owner ``o >= 0`` has ``owner_mask[o]``, keeping
    the heap valid in one pass: O(n) to find them and O(log n) to sift each.

    Later times (``dt > 0``) are sifted down from the last slot to the first: a slot's subtree
    has been passed already, and its parent, not yet moved, is no later than it was. Earlier
    times are sifted up from the first slot to the last, the mirror argument. Each event moves
    once, and as ``(time, seq)`` keys are unique the heap pops in the same order as after a
    rebuild. Returns the number of events shifted.
    """
    n = hc[C_HEAPN]
    k = 0
    if dt >= 0:
        for i in range(n - 1, -1, -1):
            o = ho[i]
            if o >= 0 and owner_mask[o]:
                ht[i] += dt
                _sift_down(ht, hs, he, ho, i, n)
                k += 1
    else:
        for i in range(n):
            o = ho[i]
            if o >= 0 and owner_mask[o]:
                _sift_up(ht, hs, he, ho, np.uint64(i), ht[i] + dt, hs[i], he[i], ho[i])
                k += 1
    return k


@njit(cache=True)
def collapse_events(hc, ht, hs, he, ho, owner_mask, t):
    """Move every pending event whose owner ``o >= 0`` has ``owner_mask[o]`` and that is later
    than ``t`` to ``t``, sifting each up in one pass from the first slot (see
    :func:`shift_events`). Their sequence numbers are kept, so they run first at ``t``, in the
    order they were scheduled. Returns the number of events moved."""
    n = hc[C_HEAPN]
    k = 0
    for i in range(n):
        o = ho[i]
        if o >= 0 and owner_mask[o] and ht[i] > t:
            _sift_up(ht, hs, he, ho, np.uint64(i), t, hs[i], he[i], ho[i])
            k += 1
    return k


@njit(cache=True)
def heapify(hc, ht, hs, he, ho):
    """Restore the heap property over the first ``hc[0]`` events in O(n) (Floyd)."""
    n = hc[C_HEAPN]
    for i in range((n - 2) // _D, -1, -1):
        _sift_down(ht, hs, he, ho, i, n)


@njit(cache=True)
def heap_is_valid(hc, ht, hs):
    """True if the heap property holds."""
    n = hc[C_HEAPN]
    for i in range(1, n):
        p = (i - 1) // _D
        if _less(ht, hs, i, p):
            return False
    return True
