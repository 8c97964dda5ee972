"""Parked shadow groups keep their members as doubly linked lists
(wormsim.netsim.packet.wormhole.shadow): a group is walked in O(its size), so materialising one
never scans every QP of the DAG."""

from __future__ import annotations

import numpy as np
from numba import njit

from tests.netsim.conftest import dag_of, star
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.run import build_state
from wormsim.netsim.packet.wormhole.shadow import _join, _leave
from wormsim.netsim.wormhole.spec import WormholeSpec


@njit  # not cached: a cached wrapper keeps the kernel code it was compiled with
def _apply(S_, ops):
    """Row k of ``ops``: (0, q, g) QP q joins group g; (1, q, -) QP q leaves its group."""
    S = S_
    for k in range(ops.shape[0]):
        if ops[k, 0] == 0:
            _join(S, ops[k, 1], ops[k, 2])
        elif S.wh_qgrp[ops[k, 1]] >= 0:
            _leave(S, ops[k, 1])


def _walk(A, g):
    out, q, prev = [], int(A["wh_ghead"][g]), -1
    while q >= 0:
        assert A["wh_gprev"][q] == prev, "backward link broken"
        out.append(q)
        prev, q = q, int(A["wh_gnext"][q])
    return out


def test_group_lists_match_membership_under_random_joins_and_leaves():
    n = 12
    dag, _ = dag_of([(i, (i + 1) % n) for i in range(n)], 10_000)
    A, _, _, _ = build_state(dag, star(n), NetworkSpec(cc="hpcc"), wormhole=WormholeSpec())
    S = st.make_state(A, wormhole=True)
    rng = np.random.default_rng(0)
    nq = A["qp_size"].size
    model = {q: -1 for q in range(nq)}
    for _ in range(40):
        ops = np.zeros((25, 3), np.int64)
        for k in range(25):
            q = int(rng.integers(nq))
            if rng.random() < 0.7:
                g = int(rng.integers(3))  # groups are labelled by QP ids
                ops[k] = (0, q, g)
                model[q] = g
            else:
                ops[k] = (1, q, 0)
                model[q] = -1
        _apply(S, ops)
        for g in range(nq):
            members = _walk(A, g)
            assert len(members) == len(set(members)), "a QP listed twice"
            assert set(members) == {q for q, h in model.items() if h == g}
        assert [int(x) for x in A["wh_qgrp"]] == [model[q] for q in range(nq)]
