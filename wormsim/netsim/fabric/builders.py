"""Topology builders: the experiment's ``cluster`` section -> :class:`Topology`.

Each builder makes a networkx graph (hosts ``0..H-1`` first, GPU ``i`` = host ``i``, then the
switches; edges carry ``rate_bps`` and ``delay_ps``) and compiles it with
:meth:`Topology.from_links`. GPUs of one server share an NVLink/NVSwitch domain
(``host_server``), which netsim times with a fluid model instead of packets.

The ``cluster.topology`` kinds are the rows of :data:`wormsim.netsim.fabric.kinds.KINDS`, each
naming its builder here (``build_<kind>(cluster) -> graph``): to add a kind, write its builder
and add its row.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.topology import Topology
from wormsim.units import BPS_PER_GBPS_F, PS_PER_NS

if TYPE_CHECKING:  # the cluster's choices of kind come from kinds.py, which imports this module
    from wormsim.netsim.fabric.cluster import ClusterSpec

__all__ = [
    "build_topology",
    "build_fat_tree",
    "build_rail_optimized",
    "build_clos",
    "fat_tree_graph",
    "rail_optimized_graph",
    "clos_graph",
    "graph_to_topology",
    "fat_tree_k",
]


def _add_link(g: nx.Graph, a: int, b: int, gbps: float, delay_ns: int) -> None:
    order = g.graph.setdefault("links", 0)
    g.graph["links"] = order + 1
    g.add_edge(
        a,
        b,
        rate_bps=int(round(gbps * BPS_PER_GBPS_F)),
        delay_ps=int(delay_ns) * PS_PER_NS,
        order=order,
    )


def fat_tree_k(hosts: int) -> int:
    """Smallest even ``k >= 2`` whose fat-tree has at least ``hosts`` hosts (``k³/4``)."""
    k = 2
    while k**3 // 4 < hosts:
        k += 2
    return k


def fat_tree_graph(k: int, host_gbps: float, fabric_gbps: float, delay_ns: int) -> nx.Graph:
    """A k-ary fat-tree with HPCC ns-3's node numbering and link order.

    Examples
    --------
    >>> g = fat_tree_graph(4, 100, 100, 1000)
    >>> g.number_of_nodes(), g.number_of_edges()
    (36, 48)
    """
    if k < 2 or k % 2:
        raise NetsimInputError(f"fat-tree k must be even and >= 2, not {k}")
    h = k // 2
    n_hosts = k**3 // 4
    g = nx.Graph()
    g.add_nodes_from(range(n_hosts), switch=False)

    def edge(p: int, e: int) -> int:
        return n_hosts + p * h + e

    def agg(p: int, a: int) -> int:
        return n_hosts + k * h + p * h + a

    def core(a: int, c: int) -> int:
        return n_hosts + 2 * k * h + a * h + c

    g.add_nodes_from(range(n_hosts, n_hosts + 2 * k * h + h * h), switch=True)
    for p in range(k):
        for e in range(h):
            for x in range(h):
                _add_link(g, (p * h + e) * h + x, edge(p, e), host_gbps, delay_ns)
            for a in range(h):
                _add_link(g, edge(p, e), agg(p, a), fabric_gbps, delay_ns)
        for a in range(h):
            for c in range(h):
                _add_link(g, agg(p, a), core(a, c), fabric_gbps, delay_ns)
    return g


def rail_optimized_graph(
    servers: int,
    gpus_per_node: int,
    servers_per_pod: int,
    host_gbps: float,
    fabric_gbps: float,
    delay_ns: int,
    oversubscription: float = 1.0,
) -> nx.Graph:
    """A two-tier rail-optimized fat-tree: one leaf per (pod, rail), all leaves to all spines."""
    n_hosts = servers * gpus_per_node
    per_pod = min(servers_per_pod, servers)
    pods = math.ceil(servers / per_pod)
    n_leaves = pods * gpus_per_node
    n_spines = max(1, math.ceil(per_pod * host_gbps / (fabric_gbps * oversubscription)))
    g = nx.Graph()
    g.add_nodes_from(range(n_hosts), switch=False)
    leaf0 = n_hosts
    spine0 = n_hosts + n_leaves
    g.add_nodes_from(range(leaf0, spine0 + n_spines), switch=True)
    for s in range(servers):
        pod = s // per_pod
        for j in range(gpus_per_node):
            _add_link(
                g, s * gpus_per_node + j, leaf0 + pod * gpus_per_node + j, host_gbps, delay_ns
            )
    for leaf in range(n_leaves):
        for sp in range(n_spines):
            _add_link(g, leaf0 + leaf, spine0 + sp, fabric_gbps, delay_ns)
    return g


def clos_graph(
    hosts: int,
    hosts_per_leaf: int,
    host_gbps: float,
    fabric_gbps: float,
    delay_ns: int,
    oversubscription: float = 1.0,
) -> nx.Graph:
    """A leaf-spine Clos: consecutive hosts per leaf, every leaf to every spine."""
    per_leaf = min(hosts_per_leaf, hosts)
    n_leaves = math.ceil(hosts / per_leaf)
    n_spines = max(1, math.ceil(per_leaf * host_gbps / (fabric_gbps * oversubscription)))
    g = nx.Graph()
    g.add_nodes_from(range(hosts), switch=False)
    leaf0, spine0 = hosts, hosts + n_leaves
    g.add_nodes_from(range(leaf0, spine0 + n_spines), switch=True)
    for x in range(hosts):
        _add_link(g, x, leaf0 + x // per_leaf, host_gbps, delay_ns)
    for leaf in range(n_leaves):
        for sp in range(n_spines):
            _add_link(g, leaf0 + leaf, spine0 + sp, fabric_gbps, delay_ns)
    return g


def graph_to_topology(g: nx.Graph, gpus: int, gpus_per_node: int, nvlink_gbps: float) -> Topology:
    """Compile a builder graph; hosts ``0..gpus-1`` are GPUs grouped into servers."""
    n = g.number_of_nodes()
    if sorted(g.nodes) != list(range(n)):
        raise NetsimInputError("topology node ids must be 0..n-1")
    switches = [u for u, d in g.nodes(data=True) if d.get("switch")]
    edges = sorted(g.edges(data=True), key=lambda e: e[2].get("order", 0))
    links = [(int(a), int(b), d["rate_bps"], d["delay_ps"]) for a, b, d in edges]
    server = np.full(n, -1, np.int32)
    server[:gpus] = np.arange(gpus, dtype=np.int32) // gpus_per_node
    return Topology.from_links(
        n,
        switches,
        links,
        host_server=server,
        nvlink_rate_bps=int(round(nvlink_gbps * BPS_PER_GBPS_F)),
    )


def build_topology(cluster: ClusterSpec) -> Topology:
    """The fabric of an experiment's cluster (built, or read from ``cluster.topology_file``).

    The builder is the one :data:`~wormsim.netsim.fabric.kinds.KINDS` names for
    ``cluster.topology``.

    Examples
    --------
    >>> from wormsim.netsim.fabric.cluster import ClusterSpec
    >>> topo = build_topology(ClusterSpec(gpus=16, gpus_per_node=8))
    >>> int((~topo.is_switch).sum()), int(topo.is_switch.sum())
    (16, 9)
    """
    from wormsim.netsim.fabric.kinds import kind

    c = cluster
    if c.topology_file is not None:
        from wormsim.netsim.formats.topology_file import cached_fabric_file, fabric_topology

        fabric = cached_fabric_file(c.topology_file)
        return fabric_topology(
            fabric, c.gpus, c.gpus_per_node, int(round(c.nvlink_gbps * BPS_PER_GBPS_F))
        )
    g = kind(c.topology).build(c)
    return graph_to_topology(g, c.gpus, c.gpus_per_node, c.nvlink_gbps)


def build_fat_tree(c: ClusterSpec) -> nx.Graph:
    """``fat_tree``: the k-ary fat-tree of Al-Fares et al. with the smallest even ``k`` whose
    ``k³/4`` hosts hold every GPU; numbering as HPCC ns-3's fat-tree example (hosts, then edge,
    aggregation and core switches, pod-major)."""
    return fat_tree_graph(fat_tree_k(c.gpus), c.host_link_gbps, c.fabric_link_gbps, c.link_delay_ns)


def build_rail_optimized(c: ClusterSpec) -> nx.Graph:
    """``rail_optimized``: GPU ``j`` of every server in a pod hangs off the pod's rail-``j``
    leaf; every leaf connects to every spine (two tiers, as the Wormhole evaluation's ROFT);
    ``hosts_per_leaf`` servers per pod (default 32) and enough spines for the requested
    oversubscription."""
    return rail_optimized_graph(
        c.num_nodes,
        c.gpus_per_node,
        c.hosts_per_leaf or 32,
        c.host_link_gbps,
        c.fabric_link_gbps,
        c.link_delay_ns,
        c.oversubscription,
    )


def build_clos(c: ClusterSpec) -> nx.Graph:
    """``clos``: leaf-spine with ``hosts_per_leaf`` consecutive hosts per leaf (default 16) and
    enough spines for the requested oversubscription."""
    return clos_graph(
        c.gpus,
        c.hosts_per_leaf or 16,
        c.host_link_gbps,
        c.fabric_link_gbps,
        c.link_delay_ns,
        c.oversubscription,
    )
