"""What a fabric is made of: nodes by tier, link rates, oversubscription, NVLink domains, and a
picture (``wormsim topology show``).

Tiers are counted from the hosts: tier 0 is the hosts (GPUs), tier 1 the switches a host is
cabled to (leaves, ToRs), tier 2 the switches one hop above them (spines, aggregation), and so
on (breadth-first distance from the nearest host). A switch's oversubscription is the capacity
of its links down (to a lower tier) over the capacity of its links up (to a higher tier).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wormsim.netsim.fabric.topology import Topology
from wormsim.units import BPS_PER_GBPS_F, PS_PER_NS_F

__all__ = ["TIER_NAMES", "FabricSummary", "node_tiers", "describe_fabric", "plot_fabric"]

#: Names of the tiers in the summary (beyond the list: ``tier N``).
TIER_NAMES = ("hosts", "leaf", "spine", "core")


def _tier_name(t: int) -> str:
    return TIER_NAMES[t] if t < len(TIER_NAMES) else f"tier {t}"


@dataclass(frozen=True)
class FabricSummary:
    """The facts ``topology show`` prints.

    Attributes
    ----------
    nodes_by_tier : dict
        Tier name -> node count (``hosts``, ``leaf``, ``spine``, ...).
    links_by_tier : list of dict
        One entry per (lower tier, upper tier, rate): ``tiers``, ``links``, ``rate_Gbps``,
        ``delay_ns``.
    oversubscription : dict
        Tier name -> ``(min, max)`` down/up capacity ratio over its switches (tiers with uplinks).
    gpus : int
        Hosts in a server (``host_server >= 0``).
    idle_hosts : int
        Hosts of the fabric outside every server (no rank runs there).
    servers : int
        NVLink domains.
    gpus_per_server : int
        GPUs of the largest NVLink domain.
    nvlink_Gbps : float
        Per-GPU NVLink rate, each direction (0: none).
    unreachable : int
        Switches no host reaches.
    """

    nodes_by_tier: dict[str, int]
    links_by_tier: list[dict[str, Any]]
    oversubscription: dict[str, tuple[float, float]]
    gpus: int
    idle_hosts: int
    servers: int
    gpus_per_server: int
    nvlink_Gbps: float
    unreachable: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON-able data (``--json``)."""
        return {
            "nodes_by_tier": self.nodes_by_tier,
            "links_by_tier": self.links_by_tier,
            "oversubscription": {k: list(v) for k, v in self.oversubscription.items()},
            "gpus": self.gpus,
            "idle_hosts": self.idle_hosts,
            "servers": self.servers,
            "gpus_per_server": self.gpus_per_server,
            "nvlink_Gbps": self.nvlink_Gbps,
            "unreachable_switches": self.unreachable,
            **self.extra,
        }


def node_tiers(topo: Topology) -> np.ndarray:
    """Each node's tier: 0 for hosts, else the hop distance from the nearest host (-1: none)."""
    tier = np.full(topo.n_nodes, -1, np.int64)
    frontier = list(np.flatnonzero(~topo.is_switch))
    tier[frontier] = 0
    while frontier:
        nxt = []
        for u in frontier:
            ports = topo.node_ports[topo.node_port_offsets[u] : topo.node_port_offsets[u + 1]]
            for v in topo.port_peer[ports]:
                if tier[v] < 0:
                    tier[v] = tier[u] + 1
                    nxt.append(int(v))
        frontier = nxt
    return tier


def describe_fabric(topo: Topology) -> FabricSummary:
    """Count a fabric's nodes and links by tier and its oversubscription (module docstring)."""
    tier = node_tiers(topo)
    counts = Counter(int(t) for t in tier if t >= 0)
    nodes = {_tier_name(t): counts[t] for t in sorted(counts)}
    a, b = topo.port_node[0::2], topo.port_peer[0::2]
    lo, hi = np.minimum(tier[a], tier[b]), np.maximum(tier[a], tier[b])
    rates, delays = topo.port_rate_bps[0::2], topo.port_delay_ps[0::2]
    groups: Counter[tuple[int, int, int, int]] = Counter(
        zip(lo.tolist(), hi.tolist(), rates.tolist(), delays.tolist(), strict=True)
    )
    links = [
        {"tiers": f"{_tier_name(x)}-{_tier_name(y)}", "links": n,
         "rate_Gbps": r / BPS_PER_GBPS_F, "delay_ns": d / PS_PER_NS_F}
        for (x, y, r, d), n in sorted(groups.items())
    ]  # fmt: skip
    down = np.zeros(topo.n_nodes)
    up = np.zeros(topo.n_nodes)
    for p in range(topo.n_ports):
        u, v = topo.port_node[p], topo.port_peer[p]
        if tier[v] < tier[u]:
            down[u] += topo.port_rate_bps[p]
        elif tier[v] > tier[u]:
            up[u] += topo.port_rate_bps[p]
    over: dict[str, tuple[float, float]] = {}
    for t in sorted(counts):
        sel = (tier == t) & topo.is_switch & (up > 0)
        if sel.any():
            ratio = down[sel] / up[sel]
            over[_tier_name(t)] = (round(float(ratio.min()), 4), round(float(ratio.max()), 4))
    hosts = ~topo.is_switch
    in_server = hosts & (topo.host_server >= 0)
    per_server = Counter(topo.host_server[in_server].tolist())
    return FabricSummary(
        nodes_by_tier=nodes,
        links_by_tier=links,
        oversubscription=over,
        gpus=int(in_server.sum()),
        idle_hosts=int((hosts & (topo.host_server < 0)).sum()),
        servers=len(per_server),
        gpus_per_server=max(per_server.values(), default=0),
        nvlink_Gbps=topo.nvlink_rate_bps / BPS_PER_GBPS_F,
        unreachable=int(((tier < 0) & topo.is_switch).sum()),
    )


def plot_fabric(topo: Topology, path: Path | str, title: str = "") -> Path:
    """Draw the fabric by tier (hosts at the bottom, coloured by NVLink domain) into a PNG.

    Large fabrics are drawn without labels; links are drawn thinner as they grow in number.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    tier = node_tiers(topo)
    g = nx.Graph()
    for u in range(topo.n_nodes):
        g.add_node(u, layer=int(tier[u]) if tier[u] >= 0 else int(tier.max()) + 1)
    g.add_edges_from(zip(topo.port_node[0::2].tolist(), topo.port_peer[0::2].tolist(), strict=True))
    pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
    width = min(24.0, 6 + topo.n_nodes / 40)
    fig, ax = plt.subplots(figsize=(width, 2.2 + 1.4 * (int(tier.max()) + 1)))
    edge_w = max(0.1, min(1.0, 200 / max(1, g.number_of_edges())))
    nx.draw_networkx_edges(g, pos, ax=ax, width=edge_w, alpha=0.4, edge_color="grey")
    hosts = [u for u in g if not topo.is_switch[u]]
    switches = [u for u in g if topo.is_switch[u]]
    size = max(4.0, min(120.0, 6000 / max(1, topo.n_nodes)))
    colors = [int(topo.host_server[u]) % 10 if topo.host_server[u] >= 0 else -1 for u in hosts]
    nx.draw_networkx_nodes(g, pos, nodelist=hosts, node_color=colors, cmap="tab10", vmin=-1,
                           vmax=9, node_size=size, ax=ax, node_shape="o")  # fmt: skip
    nx.draw_networkx_nodes(g, pos, nodelist=switches, node_color="#444444",
                           node_size=size * 1.6, ax=ax, node_shape="s")  # fmt: skip
    if topo.n_nodes <= 80:
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=6, font_color="black")
    s = describe_fabric(topo)
    parts = ", ".join(f"{n} {k}" for k, n in s.nodes_by_tier.items())
    ax.set_title(title or f"fabric: {parts}; {s.servers} NVLink domains of {s.gpus_per_server}")
    ax.set_axis_off()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from wormsim.rundir import atomic_write

    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return path
