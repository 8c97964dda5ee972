"""Intrusive doubly linked lists in arrays, shared by the jitted engines.

A family of lists over items ``0..n-1``: ``head[l]`` is the first item of list ``l`` (-1 if
empty) and ``prev[i]``, ``nxt[i]`` link item ``i`` to its neighbours (-1 at the ends). The
flow engine keeps each resource's flows this way, the packet engine each parked shadow group's
QPs; unlinking is O(1).
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit

__all__ = ["dl_push", "dl_unlink"]


@njit(cache=True, inline="always")
def dl_push(head, prev, nxt, lst, i):
    """Put item ``i`` (in no list) first in list ``lst``."""
    first = head[lst]
    nxt[i] = first
    prev[i] = -1
    if first >= 0:
        prev[first] = i
    head[lst] = i


@njit(cache=True, inline="always")
def dl_unlink(head, prev, nxt, lst, i):
    """Take item ``i`` out of list ``lst`` (its own links are left as they were)."""
    a, b = prev[i], nxt[i]
    if a >= 0:
        nxt[a] = b
    else:
        head[lst] = b
    if b >= 0:
        prev[b] = a
