"""What the routes say about flows and ports: fabric tiers, ideal FCTs, bytes per port.

The analysis reads these facts from the run directory (``ports.parquet`` and the path columns of
``flows.parquet``), so they are computed here, once, from the routes the engine used.

*Tiers.* A host is level 0; a switch's level is its hop distance to the nearest host (breadth
first), so a ToR/leaf is 1, a spine/aggregation switch 2, a core switch 3. A port's tier names
the levels it joins (``host→leaf``, ``leaf→spine``, ``spine→leaf``, ...); a flow's tier is the
highest level its route reaches (``leaf``: both ends on one ToR; ``nvlink``: inside a server;
``local``: a 0-byte flow that never leaves its rank).

*Ideal FCT* of a fabric flow is HPCC ns-3's ``standalone_fct``: the base RTT of its route (per hop,
twice the propagation delay plus one full packet's serialisation) plus its bytes, headers
included, at the route's bottleneck rate, computed in integer nanoseconds exactly as ns-3's
analysis does. An NVLink flow's ideal is its bytes at the NVLink rate.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import FRAME_HEADER_BYTES
from wormsim.units import BPS_PER_BYTE_PER_NS_INT, PS_PER_NS

__all__ = [
    "LEVEL_NAMES",
    "HEADER_BYTES",
    "switch_levels",
    "level_name",
    "port_tiers",
    "fabric_paths",
    "port_payload_bytes",
    "standalone_fct_ps",
]

#: Names of switch levels (1 = nearest the hosts); deeper ones are ``level<N>``.
LEVEL_NAMES = {0: "host", 1: "leaf", 2: "spine", 3: "core"}

#: Header bytes per packet in ns-3's ``standalone_fct`` formula (a data frame's, INT aside).
HEADER_BYTES = FRAME_HEADER_BYTES


def switch_levels(topo: Topology) -> np.ndarray:
    """Level of every node: 0 for hosts, the hop distance to the nearest host for switches
    (-1 for a switch no host reaches)."""
    level = np.full(topo.n_nodes, -1, np.int64)
    frontier = np.flatnonzero(~topo.is_switch)
    level[frontier] = 0
    depth = 0
    while frontier.size:
        depth += 1
        peers = np.unique(topo.port_peer[np.isin(topo.port_node, frontier)])
        frontier = peers[level[peers] < 0]
        level[frontier] = depth
    return level


def level_name(level: int) -> str:
    """``0 -> 'host'``, ``1 -> 'leaf'``, ``2 -> 'spine'``, ``3 -> 'core'``, ``5 -> 'level5'``."""
    return LEVEL_NAMES.get(int(level), f"level{int(level)}")


def port_tiers(topo: Topology, levels: np.ndarray | None = None) -> list[str]:
    """The tier of every directed port, e.g. ``'host→leaf'`` or ``'spine→leaf'``."""
    levels = switch_levels(topo) if levels is None else levels
    names = {int(v): level_name(v) for v in np.unique(levels)}
    return [
        f"{names[int(levels[a])]}→{names[int(levels[b])]}"
        for a, b in zip(topo.port_node, topo.port_peer, strict=True)
    ]


def _data_route_index(r_off: np.ndarray, n_qps: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices into ``r_ports`` of every QP's data route, concatenated, and each route's length."""
    start, end = r_off[0 : 2 * n_qps : 2], r_off[1 : 2 * n_qps + 1 : 2]
    hops = (end - start).astype(np.int64)
    first = np.cumsum(hops) - hops
    idx = np.arange(int(hops.sum()), dtype=np.int64) + np.repeat(start - first, hops)
    return idx, hops


def _wire_ns(size, payload_bytes: int, bottleneck_bps):
    """ns of a flow's bytes, one header per packet, at the bottleneck rate (ns-3's integers)."""
    total = size + ((size - 1) // payload_bytes + 1) * HEADER_BYTES
    return total * BPS_PER_BYTE_PER_NS_INT // bottleneck_bps


def standalone_fct_ps(size: int, hops_rate_delay: list[tuple[int, int]], payload: int) -> int:
    """ns-3's ideal FCT (ps) of one flow over links ``[(rate_bps, delay_ps), ...]``
    (:func:`fabric_paths` computes it for all flows at once)."""
    base = sum(
        2 * (d // PS_PER_NS) + payload * BPS_PER_BYTE_PER_NS_INT // r for r, d in hops_rate_delay
    )
    bottleneck = min(r for r, _ in hops_rate_delay)
    return int(base + _wire_ns(int(size), payload, bottleneck)) * PS_PER_NS


def fabric_paths(
    topo: Topology,
    routes: tuple[np.ndarray, np.ndarray],
    size_bytes: np.ndarray,
    payload_bytes: int,
    levels: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Route facts of every QP (fabric flow), in QP order.

    Parameters
    ----------
    topo : the network.
    routes : ``(r_off, r_ports)`` as the engines compile them (QP ``q``'s data route is
        ``r_ports[r_off[2q]:r_off[2q+1]]``).
    size_bytes : int64[n_qps], payload bytes of each QP.
    payload_bytes : MTU payload per packet (``network.payload_size_bytes``).
    levels : :func:`switch_levels` if already computed.

    Returns
    -------
    dict
        ``hops`` (egress ports crossed), ``bottleneck_bps``, ``base_rtt_ps``,
        ``ideal_fct_ps`` (ns-3's standalone FCT) and ``top_level`` (highest switch level).
    """
    r_off, r_ports = routes
    n = int(size_bytes.shape[0])
    levels = switch_levels(topo) if levels is None else levels
    if n == 0:
        z = np.zeros(0, np.int64)
        return dict(hops=z, bottleneck_bps=z, base_rtt_ps=z, ideal_fct_ps=z, top_level=z)
    idx, hops = _data_route_index(r_off, n)
    if (hops <= 0).any():
        raise ValueError("every fabric flow has a route of at least one port")
    # Per-hop base in integer ns, as ns-3: 2·delay + one packet's serialisation.
    ports = r_ports[idx]
    rate = topo.port_rate_bps[ports].astype(np.int64)
    per_hop_ns = (
        2 * (topo.port_delay_ps[ports] // PS_PER_NS)
        + payload_bytes * BPS_PER_BYTE_PER_NS_INT // rate
    )
    seg = np.concatenate(([0], np.cumsum(hops)[:-1]))
    base_ns = np.add.reduceat(per_hop_ns, seg)
    bottleneck = np.minimum.reduceat(rate, seg)
    ideal_ns = base_ns + _wire_ns(size_bytes.astype(np.int64), payload_bytes, bottleneck)
    top = np.maximum.reduceat(levels[topo.port_peer[ports]], seg)
    return dict(
        hops=hops,
        bottleneck_bps=bottleneck,
        base_rtt_ps=base_ns * PS_PER_NS,
        ideal_fct_ps=ideal_ns * PS_PER_NS,
        top_level=top,
    )


def port_payload_bytes(
    topo: Topology, routes: tuple[np.ndarray, np.ndarray], size_bytes: np.ndarray
) -> np.ndarray:
    """Payload bytes every directed port carried: each QP's bytes on each port of its data route.

    The same in every mode (Wormhole's fast-forwarded bytes included), so link utilisation
    compares across engines.
    """
    r_off, r_ports = routes
    n = int(size_bytes.shape[0])
    out = np.zeros(topo.n_ports, np.int64)
    if n == 0:
        return out
    idx, hops = _data_route_index(r_off, n)
    np.add.at(out, r_ports[idx], np.repeat(size_bytes.astype(np.int64), hops))
    return out
