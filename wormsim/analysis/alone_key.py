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

__all__ = ["alone_key", "node_make_up"]


def node_make_up(topo: Topology) -> np.ndarray:
    """Per node, a class id equal for two nodes of ``topo`` exactly when their ports have the
    same (rate, delay) pairs (as multisets); computed once per fabric for :func:`alone_key`."""
    classes: dict[tuple, int] = {}
    out = np.empty(topo.n_nodes, np.int64)
    offs, ports = topo.node_port_offsets.tolist(), topo.node_ports.tolist()
    rates, delays = topo.port_rate_bps.tolist(), topo.port_delay_ps.tolist()
    for u in range(topo.n_nodes):
        make_up = tuple(sorted((rates[p], delays[p]) for p in ports[offs[u] : offs[u + 1]]))
        out[u] = classes.setdefault(make_up, len(classes))
    return out


def _first_seen(items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``items`` in order of first appearance, and each item's label:
    the position of its value in that order."""
    if items.size == 0:
        return items, items
    values, first, inverse = np.unique(items, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    return values[order], rank[inverse.ravel()]


def alone_key(
    dag: DagArrays, topo: Topology, plan: FlowPlan, make_up: np.ndarray | None = None
) -> Hashable:
    """The canonical key of ``dag`` simulated alone on a fresh ``topo``.

    Parameters
    ----------
    dag : the DAG as the engines consume it (node ids ``0..n-1``).
    topo : the fabric.
    plan : :func:`~wormsim.netsim.common.flow_plan.plan_flows` of ``dag`` on ``topo`` with the
        simulation's routing and seed (so the routes are those the replay takes).
    make_up : :func:`node_make_up` of ``topo`` (computed here if not given).

    Returns
    -------
    Hashable
        A tuple, equal for two DAGs exactly when they are the same up to an order-preserving
        renaming of the nodes, servers and ports they touch.
    """
    if make_up is None:
        make_up = node_make_up(topo)
    i64 = np.int64
    n, nn = dag.n_nodes, int(topo.n_nodes)
    # What each DAG node names, in order: a compute node its rank; a flow its src and dst; a
    # fabric flow then every port of its data route and of its ACK route, each port followed by
    # its two ends and its reverse port (the port's record). Nodes are ids, ports nn + id; the
    # items sorted by (DAG node, position) and labelled by first appearance are the canonical
    # form, whatever the ids.
    comp = np.flatnonzero(dag.kind == KIND_COMPUTE)
    ends = np.flatnonzero(dag.src >= 0)
    qps = plan.qp_node.astype(i64)
    nq = qps.size
    lo, mid, hi = (
        plan.r_off[0 : 2 * nq : 2],
        plan.r_off[1 : 2 * nq : 2],
        plan.r_off[2 : 2 * nq + 1 : 2],
    )
    n_route = (hi - lo).astype(i64)
    route = (
        np.concatenate([plan.r_ports[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)])
        if nq
        else np.zeros(0, i64)
    ).astype(i64)
    start = np.repeat(np.cumsum(n_route) - n_route, n_route)
    route_pos = 3 + 4 * (np.arange(route.size, dtype=i64) - start)
    pn, pp = topo.port_node.astype(i64), topo.port_peer.astype(i64)
    rev = topo.port_reverse.astype(i64)
    items = np.concatenate(
        (
            dag.rank[comp].astype(i64),
            dag.src[ends].astype(i64),
            dag.dst[ends].astype(i64),
            np.stack((nn + route, pn[route], pp[route], nn + rev[route]), axis=1).ravel(),
        )
    )
    v = np.concatenate((comp, ends, ends, np.repeat(np.repeat(qps, n_route), 4))).astype(i64)
    pos = np.concatenate(
        (
            np.zeros(comp.size, i64),
            np.ones(ends.size, i64),
            np.full(ends.size, 2, i64),
            (route_pos[:, None] + np.arange(4, dtype=i64)).ravel(),
        )
    )
    order = np.lexsort((pos, v))
    items = items[order]
    seen, labels = _first_seen(items)
    nodes, ports = seen[seen < nn], seen[seen >= nn] - nn
    hs = topo.host_server.astype(i64)[nodes]
    servers, server_labels = _first_seen(hs[hs >= 0])
    server_label = np.full(hs.size, -1, i64)
    server_label[hs >= 0] = server_labels
    data_len = np.zeros(n, i64)
    data_len[qps] = mid - lo
    per_node = np.stack(
        (
            dag.kind.astype(i64),
            dag.size_bytes.astype(i64),
            dag.duration_ps.astype(i64),
            dag.dep_count.astype(i64),
            plan.flow_type.astype(i64),
            data_len,  # the data route's length; its ACK route follows
        ),
        axis=1,
    )
    node_records = np.stack((topo.is_switch[nodes].astype(i64), server_label, make_up[nodes]), 1)
    port_records = np.stack((topo.port_rate_bps[ports], topo.port_delay_ps[ports]), 1)
    return (
        int(topo.nvlink_rate_bps),
        per_node.tobytes(),
        dag.child_offsets.astype(i64).tobytes(),
        dag.child_index.astype(i64).tobytes(),
        v[order].tobytes(),
        pos[order].tobytes(),
        (items >= nn).tobytes(),  # node or port
        labels.astype(i64).tobytes(),
        node_records.astype(i64).tobytes(),
        port_records.astype(i64).tobytes(),
        # the relative order of the ids behind the labels (ties broken by id)
        np.argsort(nodes, kind="stable").astype(i64).tobytes(),
        np.argsort(servers, kind="stable").astype(i64).tobytes(),
        np.argsort(ports, kind="stable").astype(i64).tobytes(),
    )
