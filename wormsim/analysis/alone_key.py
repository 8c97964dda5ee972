"""Canonical key of a DAG replayed alone on a fabric, equal for DAGs that differ only in placement.

Two DAGs with equal keys present the simulator with the same problem up to a renaming of hosts,
switches, servers and ports: the same dependency structure, node kinds, sizes and durations, and
flows whose data and ACK routes cross ports of the same rates and delays, joined the same way,
between nodes with the same make-up. The renaming also keeps the relative order of the ids of
the nodes and ports involved, so a tie the simulator breaks by id is broken the same way. On a
fresh fabric such DAGs finish at the same times, bit for bit, so one simulation serves all.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

import numpy as np

from wormsim.collective.dag import KIND_COMPUTE

if TYPE_CHECKING:
    from wormsim.collective.dag import DagArrays
    from wormsim.netsim.common.flow_plan import FlowPlan
    from wormsim.netsim.fabric.topology import Topology

__all__ = ["alone_key"]


class _Labels:
    """First-seen labels of the nodes, servers and ports a DAG touches, with their records."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.nodes: dict[int, int] = {}
        self.servers: dict[int, int] = {}
        self.ports: dict[int, int] = {}
        self.records: list[tuple] = []
        self._make_up: dict[int, tuple] = {}

    def node(self, u: int) -> int:
        """The label of node ``u``, recording the node when first seen."""
        label = self.nodes.get(u)
        if label is None:
            topo = self.topo
            label = self.nodes[u] = len(self.nodes)
            s = int(topo.host_server[u])
            if s >= 0:
                server = self.servers.setdefault(s, len(self.servers))
            else:
                server = -1
            ports = topo.node_ports[topo.node_port_offsets[u] : topo.node_port_offsets[u + 1]]
            rates, delays = topo.port_rate_bps[ports].tolist(), topo.port_delay_ps[ports].tolist()
            make_up = tuple(sorted(zip(rates, delays, strict=True)))
            self.records.append(("n", label, bool(topo.is_switch[u]), server, make_up))
        return label

    def port(self, p: int) -> int:
        """The label of port ``p``, recording it (and its reverse) when first seen."""
        label = self.ports.get(p)
        if label is None:
            topo = self.topo
            label = self.ports[p] = len(self.ports)
            a, b = self.node(int(topo.port_node[p])), self.node(int(topo.port_peer[p]))
            rate, delay = int(topo.port_rate_bps[p]), int(topo.port_delay_ps[p])
            self.records.append(("p", label, a, b, rate, delay))
            self.records.append(("r", label, self.port(int(topo.port_reverse[p]))))
        return label

    def route(self, ports: np.ndarray) -> tuple[int, ...]:
        """The labels of a route's ports, in order."""
        return tuple(self.port(int(p)) for p in ports)

    def order(self, labels: dict[int, int]) -> tuple[int, ...]:
        """The labels sorted by the ids they stand for."""
        return tuple(labels[i] for i in sorted(labels))


def alone_key(dag: DagArrays, topo: Topology, plan: FlowPlan) -> Hashable:
    """The canonical key of ``dag`` simulated alone on a fresh ``topo``.

    Parameters
    ----------
    dag : the DAG as the engines consume it (node ids ``0..n-1``).
    topo : the fabric.
    plan : :func:`~wormsim.netsim.common.flow_plan.plan_flows` of ``dag`` on ``topo`` with the
        simulation's routing and seed (so the routes are those the replay takes).

    Returns
    -------
    Hashable
        A tuple, equal for two DAGs exactly when they are the same up to an order-preserving
        renaming of the nodes, servers and ports they touch.
    """
    labels = _Labels(topo)
    kind, src, dst, rank = dag.kind, dag.src, dag.dst, dag.rank
    size, duration, dep_count = dag.size_bytes, dag.duration_ps, dag.dep_count
    c_off, c_idx = dag.child_offsets, dag.child_index
    flow_type, flow_qp = plan.flow_type, plan.flow_qp
    r_off, r_ports = plan.r_off, plan.r_ports
    rows: list[tuple] = []
    for v in range(dag.n_nodes):
        k, t = int(kind[v]), int(flow_type[v])
        row: list[Hashable] = [
            k,
            int(size[v]),
            int(duration[v]),
            int(dep_count[v]),
            tuple(c_idx[c_off[v] : c_off[v + 1]].tolist()),
            t,
        ]
        if k == KIND_COMPUTE:
            row.append(labels.node(int(rank[v])))
        if src[v] >= 0:
            row += [labels.node(int(src[v])), labels.node(int(dst[v]))]
        q = int(flow_qp[v])
        if q >= 0:
            row.append(labels.route(r_ports[r_off[2 * q] : r_off[2 * q + 1]]))
            row.append(labels.route(r_ports[r_off[2 * q + 1] : r_off[2 * q + 2]]))
        rows.append(tuple(row))
    return (
        int(topo.nvlink_rate_bps),
        tuple(rows),
        tuple(labels.records),
        labels.order(labels.nodes),
        labels.order(labels.servers),
        labels.order(labels.ports),
    )
