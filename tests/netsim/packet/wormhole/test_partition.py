"""The engine's partitioner equals the connected components of the flow-port graph."""

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wormsim.netsim.packet.wormhole.partition import components


def _routes(rng: np.random.Generator, n_qps: int, n_ports: int, max_len: int):
    off, ports = [0], []
    for _ in range(2 * n_qps):  # a data route, then an ACK route, per QP
        ports += rng.integers(0, n_ports, rng.integers(0, max_len + 1)).tolist()
        off.append(len(ports))
    return np.array(off, np.int64), np.array(ports, np.int64)


def _reference(qs, r_off, r_ports, data_only):
    """networkx: components of the bipartite QP-port graph, as sets of QPs."""
    g = nx.Graph()
    for q in qs.tolist():
        g.add_node(("q", q))
        end = r_off[2 * q + 1] if data_only else r_off[2 * q + 2]
        g.add_edges_from((("q", q), ("p", int(p))) for p in r_ports[r_off[2 * q] : end])
    return {frozenset(n[1] for n in c if n[0] == "q") for c in nx.connected_components(g)} - {
        frozenset()
    }


@settings(max_examples=80, derandomize=True, deadline=None)
@given(
    st.integers(0, 10_000), st.integers(0, 60), st.integers(1, 40), st.integers(0, 4),
    st.booleans(),
)  # fmt: skip
def test_partitions_are_connected_components(seed, n, n_ports, max_len, data_only):
    rng = np.random.default_rng(seed)
    r_off, r_ports = _routes(rng, 80, n_ports, max_len)
    qs = np.sort(rng.choice(80, n, replace=False)).astype(np.int64)
    root = components(qs, r_off, r_ports, data_only, 80, n_ports)
    parts: dict[int, set[int]] = {}
    for q, r in zip(qs.tolist(), root.tolist(), strict=True):
        parts.setdefault(r, set()).add(q)
    assert {frozenset(p) for p in parts.values()} == _reference(qs, r_off, r_ports, data_only)
    for r, members in parts.items():  # the root is the smallest member (labels are stable)
        assert r == min(members)


def test_a_flow_alone_is_its_own_partition():
    r_off = np.array([0, 1, 2, 3, 4], np.int64)
    r_ports = np.array([0, 1, 2, 3], np.int64)
    root = components(np.array([0, 1], np.int64), r_off, r_ports, False, 2, 4)
    assert root.tolist() == [0, 1]
