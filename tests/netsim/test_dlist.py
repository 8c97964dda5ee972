"""The array-backed doubly linked lists both engines keep (wormsim.netsim.common.dlist)."""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.dlist import dl_push, dl_unlink


def _walk(head, prev, nxt, lst):
    out, i, before = [], int(head[lst]), -1
    while i >= 0:
        assert prev[i] == before
        out.append(i)
        before, i = i, int(nxt[i])
    return out


def test_push_and_unlink_keep_every_list_equal_to_its_model():
    rng = np.random.default_rng(3)
    n, lists = 30, 4
    head = np.full(lists, -1, np.int64)
    prev = np.full(n, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    model: dict[int, list[int]] = {lst: [] for lst in range(lists)}
    where = {}
    for _ in range(500):
        i = int(rng.integers(n))
        if i in where:
            dl_unlink(head, prev, nxt, where[i], i)
            model[where.pop(i)].remove(i)
        else:
            lst = int(rng.integers(lists))
            dl_push(head, prev, nxt, lst, i)
            model[lst].insert(0, i)
            where[i] = lst
        for lst in range(lists):
            assert _walk(head, prev, nxt, lst) == model[lst]
