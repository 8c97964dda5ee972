"""Route facts (wormsim.netsim.fabric.paths): switch levels, port tiers, ideal FCTs, bytes per port.

The ideal FCT is checked against HPCC ns-3's own ``standalone_fct`` for every recorded flow; the
rest are contracts of the routes themselves (tiers pair up across a link, bytes are conserved
from the sender's NIC to the receiver's).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from wormsim.netsim.common.flow_plan import plan_flows
from wormsim.netsim.fabric.builders import build_topology, fat_tree_graph
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.fabric.paths import (
    HEADER_BYTES,
    fabric_paths,
    port_payload_bytes,
    port_tiers,
    standalone_fct_ps,
    switch_levels,
)
from wormsim.netsim.fabric.routing import flow_routes
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats.hpcc_io import flows_to_dag, read_flows, read_topology
from wormsim.netsim.network_config import NetworkSpec

NS3 = Path(__file__).resolve().parents[1] / "data" / "ns3"
SCENARIOS = sorted(p.name for p in NS3.iterdir() if (p / "hp" / "fct.csv").is_file())

TIER_NAMES = {"host", "leaf", "spine", "core"}


def fat_tree4() -> Topology:
    """The k=4 fat-tree (hosts 0-15, edge 16-23, aggregation 24-31, core 32-35)."""
    return build_topology(ClusterSpec(gpus=16, gpus_per_node=1, topology="fat_tree"))


def random_fat_tree(seed: int) -> Topology:
    """The k=4 fat-tree with a random rate and a random (not whole-ns) delay on every link."""
    rng = np.random.default_rng(seed)
    g = fat_tree_graph(4, 100, 100, 1000)
    edges = sorted(g.edges(data=True), key=lambda e: e[2].get("order", 0))
    rates = rng.choice([25e9, 40e9, 100e9, 200e9, 400e9], size=len(edges))
    delays = rng.integers(0, 5_000_000, size=len(edges))  # ps, mostly not multiples of 1000
    links = [
        (int(a), int(b), r, int(d)) for (a, b, _), r, d in zip(edges, rates, delays, strict=True)
    ]
    switches = [u for u, d in g.nodes(data=True) if d["switch"]]
    return Topology.from_links(g.number_of_nodes(), switches, links)


def random_pairs(topo: Topology, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    hosts = topo.hosts.astype(np.int64)
    src = rng.choice(hosts, n)
    dst = rng.choice(hosts, n)
    clash = src == dst
    dst[clash] = hosts[(np.searchsorted(hosts, src[clash]) + 1) % hosts.size]
    return src, dst


def data_route(r_off: np.ndarray, r_ports: np.ndarray, q: int) -> np.ndarray:
    return r_ports[r_off[2 * q] : r_off[2 * q + 1]]


# ---------------------------------------------------------------------------------------------
# The ideal FCT is ns-3's standalone_fct
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ideal_fct_is_ns3_standalone_fct_for_every_recorded_flow(scenario):
    d = NS3 / scenario / "hp"
    topo = read_topology(d / "topology.txt")
    flows = read_flows(d / "flow.txt", topo)
    net = NetworkSpec.from_hpcc_config(d / "config.txt")
    dag, fnode = flows_to_dag(flows)
    plan = plan_flows(dag, topo, routing="ns3", seed=0)
    qp = plan.flow_qp[fnode]
    assert (qp >= 0).all()  # every ns-3 flow crosses the fabric
    sizes = np.zeros(plan.n_qps, np.int64)
    sizes[qp] = flows.size_bytes
    fp = fabric_paths(topo, (plan.r_off, plan.r_ports), sizes, net.payload_size_bytes)

    ref = pl.read_csv(d / "fct.csv").sort("flow_id")
    assert ref.height == flows.n
    assert np.array_equal(ref["size_bytes"].to_numpy(), flows.size_bytes)
    ours = fp["ideal_fct_ps"][qp]
    assert ours.dtype.kind == "i"
    expect = ref["standalone_fct_ns"].to_numpy().astype(np.int64) * 1000
    bad = np.flatnonzero(ours != expect)
    assert bad.size == 0, (
        f"{scenario}: flows {bad.tolist()} ours {ours[bad].tolist()} ns-3 {expect[bad].tolist()}"
    )


# ---------------------------------------------------------------------------------------------
# Vectorised and scalar forms agree, and each column means what it says
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("payload", [1000, 1460, 4096])
def test_fabric_paths_agrees_with_the_scalar_formula_on_random_routes(seed, payload):
    topo = random_fat_tree(seed)
    rng = np.random.default_rng(100 + seed)
    n = 200
    src, dst = random_pairs(topo, n, rng)
    _, r_off, r_ports = flow_routes(topo, src, dst, mode="hash", seed=seed)
    edge_sizes = np.array([1, payload - 1, payload, payload + 1, 2 * payload, 10**9])
    sizes = np.concatenate([edge_sizes, rng.integers(1, 50_000_000, n - edge_sizes.size)])
    fp = fabric_paths(topo, (r_off, r_ports), sizes, payload)
    levels = switch_levels(topo)
    for q in range(n):
        route = data_route(r_off, r_ports, q)
        links = [(int(topo.port_rate_bps[p]), int(topo.port_delay_ps[p])) for p in route]
        assert fp["ideal_fct_ps"][q] == standalone_fct_ps(int(sizes[q]), links, payload), q
        assert fp["hops"][q] == route.size
        assert fp["bottleneck_bps"][q] == min(r for r, _ in links)
        base_ns = sum(2 * (d // 1000) + payload * 8_000_000_000 // r for r, d in links)
        assert fp["base_rtt_ps"][q] == base_ns * 1000
        assert fp["top_level"][q] == levels[topo.port_peer[route]].max()
        # the route runs from the source NIC to the destination host
        assert topo.port_node[route[0]] == src[q] and topo.port_peer[route[-1]] == dst[q]
    # physics: never faster than the bytes at the bottleneck plus the propagation there and back
    wire_ps = sizes * 8e12 / fp["bottleneck_bps"]
    assert (fp["ideal_fct_ps"] >= np.floor(wire_ps) - 1000).all()
    assert (fp["ideal_fct_ps"] > fp["base_rtt_ps"]).all()


def test_standalone_fct_hand_computed():
    # 2 hops of 100 Gb/s and 1 us: base 2 * (2000 + 80) ns; 1 MB + 1000 headers of 48 B at 100G
    us = 1_000_000
    size = 1_000_000
    wire_ns = (size + 1000 * HEADER_BYTES) * 8 // 100
    assert standalone_fct_ps(size, [(100 * 10**9, us)] * 2, 1000) == (4160 + wire_ns) * 1000
    # a bottleneck anywhere on the path sets the rate; delays count in whole ns
    got = standalone_fct_ps(1000, [(100 * 10**9, 1_999), (25 * 10**9, 500)], 1000)
    base = (2 * 1 + 80) + (2 * 0 + 320)
    assert got == (base + (1000 + 48) * 8 // 25) * 1000


def test_fabric_paths_of_no_flows_is_empty_and_a_routeless_flow_is_refused():
    topo = fat_tree4()
    out = fabric_paths(topo, (np.zeros(1, np.int64), np.zeros(0, np.int64)), np.zeros(0), 1000)
    assert all(v.size == 0 for v in out.values())
    empty_route = (np.zeros(3, np.int64), np.zeros(0, np.int64))
    with pytest.raises(ValueError):
        fabric_paths(topo, empty_route, np.array([1000]), 1000)


# ---------------------------------------------------------------------------------------------
# Levels and tiers
# ---------------------------------------------------------------------------------------------


def test_switch_levels_of_the_k4_fat_tree():
    topo = fat_tree4()
    levels = switch_levels(topo)
    assert levels.shape == (topo.n_nodes,)
    assert (levels[:16] == 0).all()  # hosts
    assert (levels[16:24] == 1).all()  # edge
    assert (levels[24:32] == 2).all()  # aggregation
    assert (levels[32:36] == 3).all()  # core
    assert np.array_equal(levels == 0, ~topo.is_switch)


def test_port_tiers_of_the_k4_fat_tree_pair_up_across_every_link():
    topo = fat_tree4()
    tiers = port_tiers(topo)
    assert len(tiers) == topo.n_ports
    expect = {"host→leaf", "leaf→host", "leaf→spine", "spine→leaf", "spine→core", "core→spine"}
    assert set(tiers) == expect
    for p, t in enumerate(tiers):
        a, b = t.split("→")
        assert {a, b} <= TIER_NAMES
        assert tiers[int(topo.port_reverse[p])] == f"{b}→{a}", p
    # 16 host links, 16 edge-aggregation links, 16 aggregation-core links, each both ways
    counts = {t: tiers.count(t) for t in expect}
    assert all(c == 16 for c in counts.values()), counts
    # a port's tier names its own node's level then its peer's
    levels = switch_levels(topo)
    names = {0: "host", 1: "leaf", 2: "spine", 3: "core"}
    for p, t in enumerate(tiers):
        assert t == f"{names[levels[topo.port_node[p]]]}→{names[levels[topo.port_peer[p]]]}"


@pytest.mark.parametrize("kind", ["rail_optimized", "clos"])
def test_two_tier_fabrics_have_hosts_leaves_and_spines_only(kind):
    topo = build_topology(ClusterSpec(gpus=32, gpus_per_node=4, topology=kind))
    levels = switch_levels(topo)
    assert set(levels[~topo.is_switch].tolist()) == {0}
    assert set(levels[topo.is_switch].tolist()) == {1, 2}
    tiers = port_tiers(topo)
    assert set(tiers) == {"host→leaf", "leaf→host", "leaf→spine", "spine→leaf"}
    for p, t in enumerate(tiers):
        a, b = t.split("→")
        assert tiers[int(topo.port_reverse[p])] == f"{b}→{a}"


def test_flow_top_level_is_leaf_pod_or_core_by_where_the_ends_sit():
    topo = fat_tree4()
    # 0->1 share an edge switch; 0->2 share a pod; 0->4 and 0->15 cross the core
    src, dst = np.array([0, 0, 0, 0]), np.array([1, 2, 4, 15])
    _, r_off, r_ports = flow_routes(topo, src, dst, mode="ns3")
    fp = fabric_paths(topo, (r_off, r_ports), np.full(4, 10_000), 1000)
    assert fp["top_level"].tolist() == [1, 2, 3, 3]
    assert fp["hops"].tolist() == [2, 4, 6, 6]


# ---------------------------------------------------------------------------------------------
# Bytes per port
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_port_bytes_are_conserved_from_sender_nic_to_receiver(seed):
    topo = fat_tree4()
    rng = np.random.default_rng(seed)
    n = 300
    src, dst = random_pairs(topo, n, rng)
    _, r_off, r_ports = flow_routes(topo, src, dst, mode="hash", seed=seed)
    sizes = rng.integers(1, 10_000_000, n)
    per_port = port_payload_bytes(topo, (r_off, r_ports), sizes)
    assert per_port.shape == (topo.n_ports,) and per_port.dtype == np.int64
    tiers = np.array(port_tiers(topo))
    total = int(sizes.sum())
    assert per_port[tiers == "host→leaf"].sum() == total
    assert per_port[tiers == "leaf→host"].sum() == total
    # each NIC sends exactly its host's flows, each last hop delivers exactly its host's flows
    for h in topo.hosts:
        nic = np.flatnonzero(topo.port_node == h)
        last = np.flatnonzero(topo.port_peer == h)
        assert per_port[nic].sum() == sizes[src == h].sum()
        assert per_port[last].sum() == sizes[dst == h].sum()
    # what climbs a tier comes back down it: flows leaving their edge switch, and their pod
    top = fabric_paths(topo, (r_off, r_ports), sizes, 1000)["top_level"]
    for up, down, lvl in (("leaf→spine", "spine→leaf", 2), ("spine→core", "core→spine", 3)):
        assert per_port[tiers == up].sum() == sizes[top >= lvl].sum()
        assert per_port[tiers == down].sum() == sizes[top >= lvl].sum()


def test_port_bytes_equal_the_sizes_of_the_qps_routed_through_each_port():
    topo = random_fat_tree(7)
    rng = np.random.default_rng(7)
    n = 40
    src, dst = random_pairs(topo, n, rng)
    _, r_off, r_ports = flow_routes(topo, src, dst, mode="hash", seed=3)
    sizes = rng.integers(1, 5_000_000, n)
    got = port_payload_bytes(topo, (r_off, r_ports), sizes)
    routes = [set(data_route(r_off, r_ports, q).tolist()) for q in range(n)]
    for p in range(topo.n_ports):
        assert got[p] == sum(int(sizes[q]) for q in range(n) if p in routes[q]), p
    # ACK routes carry no payload: a port only ACKs cross has zero bytes
    acks = [r_ports[r_off[2 * q + 1] : r_off[2 * q + 2]].tolist() for q in range(n)]
    ack_only = set().union(*acks) - set().union(*routes)
    assert ack_only  # the case is not vacuous
    assert all(got[p] == 0 for p in ack_only)
    assert port_payload_bytes(topo, (r_off[:1], r_ports[:0]), np.zeros(0, np.int64)).sum() == 0
