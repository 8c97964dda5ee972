"""The jitted shared-port count agrees with the memo package's FCG builder."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wormsim.memo import build_fcg
from wormsim.netsim.packet.wormhole.conflicts import shared_ports


def _routes(rng: np.random.Generator, n_qps: int, n_ports: int):
    """Random data and ACK routes (ports may repeat within a route) as r_off/r_ports."""
    off, ports = [0], []
    for _ in range(2 * n_qps):
        ports += rng.integers(0, n_ports, rng.integers(1, 6)).tolist()
        off.append(len(ports))
    return np.array(off, np.int64), np.array(ports, np.int32)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 30), st.integers(1, 20), st.sampled_from([1, 2]))
def test_shared_ports_are_the_fcg_edges(seed, n, n_ports, route_end):
    rng = np.random.default_rng(seed)
    r_off, r_ports = _routes(rng, 40, n_ports)
    qs = rng.choice(40, n, replace=False).astype(np.int64)
    i, j, w = shared_ports(r_off, r_ports, qs, route_end)
    g = build_fcg(
        (k, 1e9, r_ports[r_off[2 * q] : r_off[2 * q + route_end]].tolist())
        for k, q in enumerate(qs.tolist())
    )
    expect = sorted((min(u, v), max(u, v), x) for u, v, x in g.edges(data="weight"))
    assert list(zip(i.tolist(), j.tolist(), w.tolist(), strict=True)) == expect
    assert np.all(i < j)


def test_a_flow_alone_or_disjoint_has_no_edges():
    r_off = np.array([0, 2, 3, 5, 6], np.int64)
    r_ports = np.array([1, 2, 7, 3, 4, 8], np.int32)
    for qs in (np.array([0]), np.array([0, 1])):
        i, j, w = shared_ports(r_off, r_ports, qs.astype(np.int64), 2)
        assert i.size == j.size == w.size == 0
