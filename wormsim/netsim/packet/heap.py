"""Array binary heap of events keyed by ``(time, seq)``, with per-event owners.

Shift design (for Wormhole, DESIGN §5): there is one heap for the whole simulation and every
event carries an *owner*: the egress port it belongs to (``0 .. n_ports-1``: transmit-done,
packet arrival on the link out of that port, NIC wake-up), the QP it belongs to
(``n_ports + qp``: DCQCN timers), or ``-1`` (global: DAG, fluid, sampling; never shifted).
:func:`shift_events` adds ``dt`` to every pending event whose owner is in a boolean mask and
rebuilds the heap in O(n) (Floyd). Sequence numbers are kept, so ties stay deterministic.

An event is ``(time, seq, code, owner)`` with ``code = type | arg << 8``.
"""

from __future__ import annotations

from numba import njit

__all__ = ["heap_push", "heap_pop", "shift_events", "heap_is_valid"]

C_HEAPN = 0
C_SEQ = 1


@njit(cache=True, inline="always")
def _less(ht, hs, i, j):
    return ht[i] < ht[j] or (ht[i] == ht[j] and hs[i] < hs[j])


@njit(cache=True, inline="always")
def _swap(ht, hs, he, ho, i, j):
    ht[i], ht[j] = ht[j], ht[i]
    hs[i], hs[j] = hs[j], hs[i]
    he[i], he[j] = he[j], he[i]
    ho[i], ho[j] = ho[j], ho[i]


@njit(cache=True)
def _sift_down(ht, hs, he, ho, i, n):
    while True:
        left = 2 * i + 1
        if left >= n:
            return
        m = left
        r = left + 1
        if r < n and _less(ht, hs, r, left):
            m = r
        if _less(ht, hs, m, i):
            _swap(ht, hs, he, ho, i, m)
            i = m
        else:
            return


@njit(cache=True)
def heap_push(hc, ht, hs, he, ho, t, etype, arg, owner):
    """Push an event (``hc`` holds ``[size, next_seq]``)."""
    i = hc[C_HEAPN]
    hc[C_HEAPN] = i + 1
    ht[i] = t
    hs[i] = hc[C_SEQ]
    hc[C_SEQ] += 1
    he[i] = etype | (arg << 8)
    ho[i] = owner
    while i > 0:
        p = (i - 1) >> 1
        if _less(ht, hs, i, p):
            _swap(ht, hs, he, ho, i, p)
            i = p
        else:
            break


@njit(cache=True)
def heap_pop(hc, ht, hs, he, ho):
    """Pop the earliest event; returns ``(time, code, owner)``."""
    t = ht[0]
    e = he[0]
    o = ho[0]
    n = hc[C_HEAPN] - 1
    hc[C_HEAPN] = n
    if n > 0:
        ht[0] = ht[n]
        hs[0] = hs[n]
        he[0] = he[n]
        ho[0] = ho[n]
        _sift_down(ht, hs, he, ho, 0, n)
    return t, e, o


@njit(cache=True)
def shift_events(hc, ht, hs, he, ho, owner_mask, dt):
    """Add ``dt`` to every pending event whose owner ``o >= 0`` has ``owner_mask[o]``; re-heapify.

    Returns the number of events shifted.
    """
    n = hc[C_HEAPN]
    k = 0
    for i in range(n):
        o = ho[i]
        if o >= 0 and owner_mask[o]:
            ht[i] += dt
            k += 1
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(ht, hs, he, ho, i, n)
    return k


@njit(cache=True)
def heap_is_valid(hc, ht, hs):
    """True if the heap property holds."""
    n = hc[C_HEAPN]
    for i in range(1, n):
        p = (i - 1) >> 1
        if _less(ht, hs, i, p):
            return False
    return True
