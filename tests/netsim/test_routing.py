import numpy as np

from wormsim.netsim.fabric.routing import _pair_rtt_bdp as _RTT_BDP_KERNEL
from wormsim.netsim.fabric.routing import compile_routes, murmur3_32, pair_rtt_bdp
from wormsim.netsim.formats.hpcc_io import read_topology


def _py_murmur(words, seed):
    m = 0xFFFFFFFF
    h = seed
    for k in words:
        k = (k * 0xCC9E2D51) & m
        k = ((k << 15) | (k >> 17)) & m
        k = (k * 0x1B873593) & m
        h ^= k
        h = ((h << 13) | (h >> 19)) & m
        h = (h * 5 + 0xE6546B64) & m
    h ^= 12
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    return h ^ (h >> 16)


def test_murmur_matches_reference():
    for w in [(0, 0, 0), (0x0B000001, 0x0B000501, 10000 | 100 << 16), (7, 2**32 - 1, 5)]:
        for seed in (0, 16, 35):
            assert murmur3_32(*w, seed) == _py_murmur(w, seed)


def test_max_rtt_bdp_as_ns3():
    t = read_topology("tests/data/ns3/fattree4-perm/hp/topology.txt")
    assert pair_rtt_bdp(t) == (12480, 156000)
    t = read_topology("tests/data/ns3/dumbbell8/hp/topology.txt")
    assert pair_rtt_bdp(t) == (4160, 52000)


def test_routes_shortest_and_valid():
    t = read_topology("tests/data/ns3/fattree4-perm/hp/topology.txt")
    src = np.array([0, 2, 13, 0])
    dst = np.array([5, 3, 15, 1])
    for mode in ("ns3", "hash"):
        off, ports, ok = compile_routes(t, src, dst, np.full(4, 10000), mode=mode)
        assert ok
        lens = np.diff(off)
        assert lens.tolist() == [6, 6, 2, 2, 4, 4, 2, 2]
        for r in range(8):
            ps = ports[off[r] : off[r + 1]]
            for a, b in zip(ps[:-1], ps[1:], strict=True):
                assert t.port_peer[a] == t.port_node[b]  # contiguous
        assert t.port_node[ports[off[0]]] == 0 and t.port_peer[ports[off[1] - 1]] == 5


def test_ns3_candidate_order_example():
    # README: edge switch 16 toward host 5 has next hops [25, 24] (BFS discovery order)
    from wormsim.netsim.fabric.routing import _bfs, bfs_tables

    n, is_sw, pn, pp, pr, pd, offs, nports = bfs_tables(
        read_topology("tests/data/ns3/fattree4-perm/hp/topology.txt")
    )
    dist = np.empty(n, np.int64)
    pos = np.empty(n, np.int64)
    z = [np.empty(n, np.int64) for _ in range(3)]
    _bfs(5, n, is_sw, pp, pr, pd, offs, nports, 1000, dist, pos, *z)
    cands = [int(pp[p]) for p in nports[offs[16] : offs[17]] if dist[pp[p]] == dist[16] - 1]
    assert sorted(cands, key=lambda v: pos[v]) == [25, 24]


def test_a_flow_between_unconnected_hosts_is_named():
    """Two separate stars: the error names the first flow that cannot be routed."""
    import pytest

    from wormsim.netsim.errors import NetsimInputError
    from wormsim.netsim.fabric.routing import flow_routes
    from wormsim.netsim.fabric.topology import Topology

    links = [(0, 4, 100e9, 1_000_000), (1, 4, 100e9, 1_000_000)]
    links += [(2, 5, 100e9, 1_000_000), (3, 5, 100e9, 1_000_000)]
    topo = Topology.from_links(6, [4, 5], links)
    src, dst = np.array([0, 1]), np.array([1, 3])
    with pytest.raises(NetsimInputError, match="flow 1 from host 1 to host 3 has no path"):
        flow_routes(topo, src, dst)


# ---------------------------------------------------------------------------------------------
# One path per connection: the steps of an NCCL channel ride one queue pair
# ---------------------------------------------------------------------------------------------


def _fat_tree4():
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.netsim.fabric.cluster import ClusterSpec

    return build_topology(ClusterSpec(gpus=16, gpus_per_node=1, topology="fat_tree"))


def _data_route(off, ports, f):
    return ports[off[2 * f] : off[2 * f + 1]].tolist(), ports[off[2 * f + 1] : off[2 * f + 2]]


def test_flows_of_one_connection_take_one_path_and_connections_spread():
    topo = _fat_tree4()
    n = 64  # 0 -> 15 crosses the core: 4 equal-cost paths
    src, dst = np.zeros(n, np.int64), np.full(n, 15, np.int64)
    sport = np.full(n, 10000)
    conn = np.arange(n) % 8  # eight connections, eight flows each
    off, ports, ok = compile_routes(topo, src, dst, sport, mode="hash", seed=3, connection=conn)
    assert ok
    routes = [tuple(_data_route(off, ports, f)[0]) for f in range(n)]
    acks = [tuple(_data_route(off, ports, f)[1].tolist()) for f in range(n)]
    for c in range(8):
        assert len({routes[f] for f in range(n) if conn[f] == c}) == 1
        assert len({acks[f] for f in range(n) if conn[f] == c}) == 1
    assert len(set(routes)) > 1  # connections are hashed apart, as ECMP spreads QPs
    # without connection ids every flow is hashed on its own: the 64 flows use every path
    off1, ports1, _ = compile_routes(topo, src, dst, sport, mode="hash", seed=3)
    assert len({tuple(_data_route(off1, ports1, f)[0]) for f in range(n)}) == 4


def test_dag_connections_are_src_dst_group_channel():
    import polars as pl

    from wormsim.collective.dag import dag_to_arrays

    rows = [  # node_id, kind, src, dst, group, channel
        (0, "flow", 0, 1, "dp", 0),
        (1, "flow", 0, 1, "dp", 0),  # the next ring step on the same channel
        (2, "flow", 0, 1, "dp", 1),  # another channel
        (3, "flow", 0, 1, "pp", 0),  # another communicator between the same ranks
        (4, "flow", 1, 0, "dp", 0),  # the other direction
        (5, "compute", None, None, "", None),
    ]
    dag = pl.DataFrame(
        {
            "node_id": [r[0] for r in rows],
            "kind": [r[1] for r in rows],
            "src": [r[2] for r in rows],
            "dst": [r[3] for r in rows],
            "rank": [None] * 5 + [0],
            "size_bytes": [1000] * 5 + [0],
            "duration_ps": [0] * 5 + [10],
            "deps": [[], [0], [], [], [], []],
            "group": [r[4] for r in rows],
            "channel": [r[5] for r in rows],
        },
        schema_overrides={"src": pl.Int32, "dst": pl.Int32, "rank": pl.Int32},
    )
    c = dag_to_arrays(dag).connection
    assert c[0] == c[1]
    assert len({c[0], c[2], c[3], c[4]}) == 4
    assert c[5] == -1
    # a table without the labels (HPCC flow files) has no connections: one per flow
    assert dag_to_arrays(dag.drop("group", "channel")).connection is None


def test_routes_do_not_depend_on_the_other_flows():
    """Routes are compiled grouped by destination: each flow's routes are those it gets alone."""
    from wormsim.netsim.fabric.routing import ns3_sports

    topo = _fat_tree4()
    rng = np.random.default_rng(7)
    hosts = np.flatnonzero(~topo.is_switch)
    src = rng.choice(hosts, 200)
    dst = rng.choice(hosts, 200)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    sport = ns3_sports(src, dst)
    conn = rng.integers(0, 20, src.size)
    for mode in ("hash", "ns3"):
        off, ports, ok = compile_routes(topo, src, dst, sport, mode=mode, seed=5, connection=conn)
        assert ok
        for f in range(0, src.size, 7):
            o1, p1, _ = compile_routes(
                topo, src[f : f + 1], dst[f : f + 1], sport[f : f + 1], mode=mode, seed=5,
                connection=conn[f : f + 1],
            )  # fmt: skip
            assert ports[off[2 * f] : off[2 * f + 2]].tolist() == p1.tolist()
            assert (off[2 * f + 1] - off[2 * f]) == o1[1]


def test_ns3_sports_number_each_pair_in_flow_order():
    from wormsim.netsim.fabric.routing import ns3_sports

    rng = np.random.default_rng(3)
    src, dst = rng.integers(-2, 9, 500), rng.integers(0, 9, 500)
    seen: dict[tuple[int, int], int] = {}
    expected = []
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        expected.append(10000 + seen.get((a, b), 0))
        seen[(a, b)] = seen.get((a, b), 0) + 1
    assert ns3_sports(src, dst).tolist() == expected
    assert ns3_sports(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []


def _fresh_rtt_bdp(t, payload=1000):
    """pair_rtt_bdp computed anew, past the cache."""
    from wormsim.netsim.fabric import routing

    n_nodes, is_switch, _, pp, pr, pd, offs, nports = routing._tables(t)
    rtt, bdp = _RTT_BDP_KERNEL(
        t.hosts.astype(np.int64), n_nodes, is_switch, pp, pr, pd, offs, nports, payload
    )
    return int(rtt), int(bdp)


def test_pair_rtt_bdp_cache_equals_a_fresh_computation_and_is_per_fabric(monkeypatch):
    import dataclasses

    from wormsim.netsim.fabric import routing

    monkeypatch.setattr(routing, "_RTT_BDP", routing.OrderedDict())
    bfs = []
    kernel = routing._pair_rtt_bdp
    monkeypatch.setattr(routing, "_pair_rtt_bdp", lambda *a: bfs.append(1) or kernel(*a))
    t = read_topology("tests/data/ns3/fattree4-perm/hp/topology.txt")
    first = pair_rtt_bdp(t)
    assert first == pair_rtt_bdp(t) == _fresh_rtt_bdp(t) == (12480, 156000)
    same = read_topology("tests/data/ns3/fattree4-perm/hp/topology.txt")  # equal, not the same
    assert pair_rtt_bdp(same) == first
    assert len(bfs) == 1  # one BFS from every host for that fabric
    # a longer wire: every RTT through it grows, so the fabric's maximum does too
    slower = dataclasses.replace(t, port_delay_ps=t.port_delay_ps * 2)
    assert pair_rtt_bdp(slower) == _fresh_rtt_bdp(slower) != first
    assert pair_rtt_bdp(slower)[0] > first[0]
    # a bigger payload: the same paths, longer serialisation
    assert pair_rtt_bdp(t, 4000) == _fresh_rtt_bdp(t, 4000) != first
    # an array changed in place is another fabric, not a stale hit
    t.port_rate_bps[:] = t.port_rate_bps // 4
    assert pair_rtt_bdp(t) == _fresh_rtt_bdp(t) != first
    assert len(bfs) == 4


def test_pair_rtt_bdp_cache_is_bounded(monkeypatch):
    import dataclasses

    from wormsim.netsim.fabric import routing

    monkeypatch.setattr(routing, "_RTT_BDP", routing.OrderedDict())
    t = read_topology("tests/data/ns3/dumbbell8/hp/topology.txt")
    for k in range(routing._RTT_BDP_SIZE + 5):
        u = dataclasses.replace(t, port_delay_ps=t.port_delay_ps + k)
        assert pair_rtt_bdp(u) == _fresh_rtt_bdp(u)
    assert len(routing._RTT_BDP) == routing._RTT_BDP_SIZE
