"""Topology builders: structure, capacities, NVLink domains; and a ring all-reduce against α-β."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import polars as pl
import pytest

from wormsim.netsim.fabric.builders import (
    build_topology,
    clos_graph,
    fat_tree_graph,
    fat_tree_k,
    rail_optimized_graph,
)
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.formats.hpcc_io import read_topology

NS3 = Path(__file__).resolve().parents[1] / "data" / "ns3"


def test_fat_tree_is_the_ns3_fat_tree():
    """Same numbering and link order as the HPCC ns-3 k=4 example, so ns-3 routing applies."""
    ours = build_topology(
        ClusterSpec(
            gpus=16, gpus_per_node=1, topology="fat_tree", host_link_gbps=100, fabric_link_gbps=100
        )
    )
    ref = read_topology(NS3 / "fattree4-perm" / "hp" / "topology.txt")
    assert ours.n_nodes == ref.n_nodes
    assert np.array_equal(ours.is_switch, ref.is_switch)
    for field in ("port_node", "port_peer", "port_rate_bps", "port_delay_ps"):
        assert np.array_equal(getattr(ours, field), getattr(ref, field)), field


@pytest.mark.parametrize("k", [4, 6, 8])
def test_fat_tree_structure(k):
    g = fat_tree_graph(k, 100, 100, 1000)
    hosts = [u for u, d in g.nodes(data=True) if not d["switch"]]
    assert len(hosts) == k**3 // 4
    assert g.number_of_nodes() - len(hosts) == 5 * k**2 // 4
    assert all(g.degree(h) == 1 for h in hosts)
    switches = [u for u, d in g.nodes(data=True) if d["switch"]]
    assert all(g.degree(s) == k for s in switches)  # every switch has k ports
    # full bisection: k³/4 host links and the same capacity at every tier
    assert g.number_of_edges() == 3 * k**3 // 4
    assert nx.diameter(g) == 6
    assert fat_tree_k(16) == 4 and fat_tree_k(17) == 6 and fat_tree_k(128) == 8


def test_rail_optimized_rails_and_capacity():
    servers, g_per, pod = 8, 4, 4
    g = rail_optimized_graph(servers, g_per, pod, 100, 400, 1000)
    n_hosts = servers * g_per
    leaf_of = {h: next(iter(g[h])) for h in range(n_hosts)}
    for s in range(servers):
        for j in range(g_per):
            for s2 in range(servers):
                same_leaf = leaf_of[s * g_per + j] == leaf_of[s2 * g_per + j]
                assert same_leaf == (s // pod == s2 // pod)  # same rail, same pod: same leaf
        assert len({leaf_of[s * g_per + j] for j in range(g_per)}) == g_per  # one leaf per rail
    leaves = set(leaf_of.values())
    assert len(leaves) == (servers // pod) * g_per
    spines = [u for u, d in g.nodes(data=True) if d["switch"] and u not in leaves]
    for leaf in leaves:  # non-blocking: uplink capacity equals downlink capacity
        down = sum(g[leaf][h]["rate_bps"] for h in g[leaf] if h < n_hosts)
        up = sum(g[leaf][s]["rate_bps"] for s in g[leaf] if s in spines)
        assert up == down


def test_clos_oversubscription():
    g = clos_graph(64, 16, 100, 400, 1000, oversubscription=2.0)
    leaves = {next(iter(g[h])) for h in range(64)}
    for leaf in leaves:
        down = sum(g[leaf][h]["rate_bps"] for h in g[leaf] if h < 64)
        up = sum(g[leaf][s]["rate_bps"] for s in g[leaf] if s >= 64)
        assert down / up == pytest.approx(2.0)


def test_nvlink_domains():
    topo = build_topology(ClusterSpec(gpus=16, gpus_per_node=8, nvlink_gbps=2400))
    assert topo.nvlink_rate_bps == 2_400_000_000_000
    assert list(topo.host_server[:16]) == [0] * 8 + [1] * 8
    assert (topo.host_server[16:] == -1).all()


def test_ring_allreduce_matches_alpha_beta():
    """A ring all-reduce over a non-blocking fabric takes the α-β time within a few percent.

    One leaf switch (a Clos with all hosts under it) is non-blocking for any ring; in a fat-tree
    ECMP hash collisions can put two ring edges on one link, which is physics, not the α-β model.
    """
    from wormsim.collective.dag import dag_to_arrays
    from wormsim.collective.expand import expand_dag
    from wormsim.netsim.network_config import NetworkSpec
    from wormsim.netsim.packet.run import run_packet
    from wormsim.workload.ops import OPS_SCHEMA

    n, size = 8, 16_000_000
    ranks = list(range(n))
    rows = [
        dict(
            op_id=i,
            rank=r,
            seq=0,
            kind="comm",
            name="ar",
            phase="bwd",
            stage=0,
            chunk=0,
            layer=-1,
            microbatch=-1,
            duration_ps=0,
            flops=0.0,
            collective="allreduce",
            group="dp",
            coll_id=0,
            peer=-1,
            size_bytes=size,
            split_bytes=None,
            deps=[],
        )
        for i, r in enumerate(ranks)
    ]
    ops = pl.DataFrame(rows, schema=OPS_SCHEMA)
    from wormsim.collective.config import CollectiveSpec

    dag = expand_dag(ops, (1, n), CollectiveSpec(allreduce="ring", max_channels=1))
    topo = build_topology(
        ClusterSpec(
            gpus=n,
            gpus_per_node=1,
            topology="clos",
            hosts_per_leaf=n,
            host_link_gbps=100,
            fabric_link_gbps=100,
        )
    )
    net = NetworkSpec(cc="hpcc")
    res = run_packet(dag_to_arrays(dag), topo, net, routing="hash", seed=1)
    took = res.node_finish_ps.max() / 1e12
    # β: in a ring every host link carries its data (1078 B per 1000 B payload with HPCC's INT)
    # plus the ACKs of the flow it receives (76 B per packet), and HPCC holds every link at
    # U_TARGET = 95 % of its rate.
    chunk = size / n
    packets = chunk / net.payload_size_bytes
    link_bytes = packets * (1078 + 76)
    step_bw = net.u_target * 100e9 / 8
    # α: one step's fixed cost = the base RTT of a 2-link path (1 µs links) plus one data
    # packet's and one ACK's serialization per hop (ns-3's standalone-FCT latency)
    hops = 2
    alpha = 2 * hops * 1e-6 + hops * (1078 + 76) * 8 / 100e9
    expected = 2 * (n - 1) * (link_bytes / step_bw + alpha)
    assert took == pytest.approx(expected, rel=0.03)
