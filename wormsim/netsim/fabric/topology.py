"""Network topology as structure-of-arrays (:class:`Topology`).

Every link is two directed *ports*, one per direction: port ``p`` is owned by node
``port_node[p]`` and transmits to ``port_peer[p]``; ``port_reverse[p]`` is the port of the opposite
direction. Builders (fat-tree, Clos, ...) construct the dataclass with :meth:`Topology.from_links`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wormsim.netsim.errors import NetsimInputError

__all__ = ["Topology"]


@dataclass(frozen=True)
class Topology:
    """Nodes and directed ports of a network.

    Attributes
    ----------
    n_nodes : int
    is_switch : bool[n_nodes]
    port_node, port_peer : int32[n_ports]
        Owning node and the node at the other end of each directed port.
    port_rate_bps, port_delay_ps : int64[n_ports]
        Line rate and one-way propagation delay.
    port_reverse : int32[n_ports]
        The port of the opposite direction of the same link.
    node_port_offsets : int64[n_nodes+1], node_ports : int32[n_ports]
        CSR: the ports of node ``u`` are ``node_ports[node_port_offsets[u]:node_port_offsets[u+1]]``
        (in link order).
    host_server : int32[n_nodes]
        Server index of a host (GPUs of one server share an NVLink domain), ``-1`` if none.
    nvlink_rate_bps : int
        Per-GPU NVLink egress/ingress rate; ``0`` if there is no NVLink domain.
    """

    n_nodes: int
    is_switch: np.ndarray
    port_node: np.ndarray
    port_peer: np.ndarray
    port_rate_bps: np.ndarray
    port_delay_ps: np.ndarray
    port_reverse: np.ndarray
    node_port_offsets: np.ndarray
    node_ports: np.ndarray
    host_server: np.ndarray
    nvlink_rate_bps: int = 0

    @property
    def n_ports(self) -> int:
        """Number of directed ports (two per link)."""
        return int(self.port_node.shape[0])

    @property
    def hosts(self) -> np.ndarray:
        """Ids of the host (non-switch) nodes."""
        return np.flatnonzero(~self.is_switch).astype(np.int32)

    @classmethod
    def from_links(
        cls,
        n_nodes: int,
        switches: np.ndarray | list[int],
        links: list[tuple[int, int, float, float]],
        *,
        host_server: np.ndarray | None = None,
        nvlink_rate_bps: int = 0,
    ) -> Topology:
        """Build from an undirected link list.

        Parameters
        ----------
        n_nodes : int
        switches : ids of switch nodes (the rest are hosts).
        links : ``(a, b, rate_bps, delay_ps)`` per link; link ``i`` gives ports ``2i`` (a->b) and
            ``2i+1`` (b->a).
        host_server : optional int32[n_nodes], server index per host (-1 = none).
        nvlink_rate_bps : per-GPU NVLink rate (0 = none).
        """
        is_switch = np.zeros(n_nodes, dtype=bool)
        sw = np.asarray(switches, dtype=np.int64)
        if sw.size and (sw.min() < 0 or sw.max() >= n_nodes):
            raise NetsimInputError(f"a switch id is outside 0..{n_nodes - 1}")
        is_switch[sw] = True
        m = len(links)
        port_node = np.empty(2 * m, np.int32)
        port_peer = np.empty(2 * m, np.int32)
        rate = np.empty(2 * m, np.int64)
        delay = np.empty(2 * m, np.int64)
        for i, (a, b, r, d) in enumerate(links):
            if not (0 <= a < n_nodes and 0 <= b < n_nodes) or a == b:
                raise NetsimInputError(f"link {i} ({a} {b}) names an unknown node or a self-loop")
            if r <= 0 or d < 0:
                raise NetsimInputError(f"link {i} ({a} {b}) needs rate > 0 and delay >= 0")
            port_node[2 * i], port_peer[2 * i] = a, b
            port_node[2 * i + 1], port_peer[2 * i + 1] = b, a
            rate[2 * i] = rate[2 * i + 1] = int(r)
            delay[2 * i] = delay[2 * i + 1] = int(d)
        reverse = (np.arange(2 * m, dtype=np.int32) ^ 1).astype(np.int32)
        order = np.argsort(port_node, kind="stable")
        offsets = np.zeros(n_nodes + 1, np.int64)
        np.cumsum(np.bincount(port_node, minlength=n_nodes), out=offsets[1:])
        hs = (
            np.full(n_nodes, -1, np.int32)
            if host_server is None
            else np.asarray(host_server, np.int32)
        )
        return cls(
            n_nodes=n_nodes,
            is_switch=is_switch,
            port_node=port_node,
            port_peer=port_peer,
            port_rate_bps=rate,
            port_delay_ps=delay,
            port_reverse=reverse,
            node_port_offsets=offsets,
            node_ports=order.astype(np.int32),
            host_server=hs,
            nvlink_rate_bps=int(nvlink_rate_bps),
        )
