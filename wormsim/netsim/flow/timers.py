"""The flow engine's two event queues, both on the packet engine's event heap
(:mod:`wormsim.netsim.packet.heap`): node-done timers keyed ``(time, seq)``, and flows' drain
times keyed ``(time, node)``, lazily: ``fh_pos_ps[v]`` is flow ``v``'s live drain time (-1 if none),
an entry whose time differs is stale and skipped. Re-timing a flow pushes a new entry instead of
moving the old one; stale entries are dropped in bulk (:func:`compact_drains`) when they
outnumber the live ones.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.heap import heap_pop, heap_push_seq, heapify

__all__ = [
    "I64_MAX",
    "push_timer",
    "pop_timer",
    "next_timer",
    "next_drain",
    "pop_drain",
    "compact_drains",
]

I64_MAX = np.iinfo(np.int64).max


@njit(cache=True)
def push_timer(S, t, v):
    """Node ``v`` is done at ``t``."""
    seq = S.th_c[1]
    S.th_c[1] = seq + 1
    heap_push_seq(S.th_c, S.th_t_ps, S.th_s, S.th_e, S.th_o, t, seq, v, 0)


@njit(cache=True)
def next_timer(S):
    """Time of the earliest node-done timer (``I64_MAX`` if none)."""
    return S.th_t_ps[0] if S.th_c[0] > 0 else I64_MAX


@njit(cache=True)
def pop_timer(S):
    """Remove the earliest node-done timer; returns its node."""
    _, v, _ = heap_pop(S.th_c, S.th_t_ps, S.th_s, S.th_e, S.th_o)
    return v


@njit(cache=True)
def next_drain(S):
    """Earliest live drain time (``I64_MAX`` if none); stale tops are discarded."""
    while S.fh_c[0] > 0:
        if S.fh_pos_ps[S.fh_e[0]] == S.fh_t_ps[0]:
            return S.fh_t_ps[0]
        heap_pop(S.fh_c, S.fh_t_ps, S.fh_s, S.fh_e, S.fh_o)
    return I64_MAX


@njit(cache=True)
def pop_drain(S):
    """Remove the top drain (call after :func:`next_drain` found it live); returns its flow."""
    _, v, _ = heap_pop(S.fh_c, S.fh_t_ps, S.fh_s, S.fh_e, S.fh_o)
    S.fh_pos_ps[v] = -1
    return v


@njit(cache=True)
def compact_drains(S):
    """Drop stale drain entries and re-heapify."""
    k = 0
    for i in range(S.fh_c[0]):
        v = S.fh_e[i]
        if S.fh_pos_ps[v] == S.fh_t_ps[i]:
            S.fh_t_ps[k] = S.fh_t_ps[i]
            S.fh_s[k] = S.fh_s[i]
            S.fh_e[k] = v
            S.fh_o[k] = S.fh_o[i]
            k += 1
    S.fh_c[0] = k
    heapify(S.fh_c, S.fh_t_ps, S.fh_s, S.fh_e, S.fh_o)
