"""How a DAG's flows meet the network, decided once for every engine.

Both engines (packet and flow) see the same flows the same way: every DAG flow is *instant*
(0 bytes: finishes when released), *NVLink* (both ends on one server, ``host_server >= 0`` and
equal: the intra-server fluid model) or *fabric* (everything else: a QP on the source NIC).
Fabric flows are numbered as QPs in DAG order and get their data and ACK routes from
:func:`~wormsim.netsim.fabric.routing.flow_routes`, so for the same ``routing`` and ``seed`` the two
engines put every flow on the same ports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wormsim.collective.dag import KIND_COMPUTE, KIND_FLOW, DagArrays, check_flow_endpoints
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.routing import flow_routes
from wormsim.netsim.fabric.topology import Topology

__all__ = ["FlowPlan", "plan_flows", "FT_NONE", "FT_INSTANT", "FT_FABRIC", "FT_NVLINK"]

FT_NONE, FT_INSTANT, FT_FABRIC, FT_NVLINK = 0, 1, 2, 3
"""Flow types (``FlowPlan.flow_type``): not a flow, 0 bytes, across the fabric, intra-server."""


@dataclass(frozen=True)
class FlowPlan:
    """The flows of a DAG on a topology.

    Attributes
    ----------
    flow_type : int8[n_nodes]
        ``FT_*`` of every DAG node.
    flow_qp : int64[n_nodes]
        QP of a fabric flow, ``-1`` for every other node.
    qp_node : int64[n_qps]
        DAG node of each QP (fabric flows in DAG order).
    qp_src, qp_dst : int64[n_qps]
        Its source and destination host.
    sport : int64[n_qps]
        Its source port (ns-3 numbering; it seeds ns-3's ECMP hash).
    r_off, r_ports : int64 arrays
        Compiled routes: QP ``q``'s data route is ``r_ports[r_off[2q]:r_off[2q+1]]`` (egress
        ports from the source NIC to the last switch), its ACK route runs on to ``r_off[2q+2]``.
    """

    flow_type: np.ndarray
    flow_qp: np.ndarray
    qp_node: np.ndarray
    qp_src: np.ndarray
    qp_dst: np.ndarray
    sport: np.ndarray
    r_off: np.ndarray
    r_ports: np.ndarray

    @property
    def n_qps(self) -> int:
        """Number of fabric flows."""
        return int(self.qp_node.size)


def plan_flows(dag: DagArrays, topo: Topology, *, routing: str, seed: int) -> FlowPlan:
    """Check the DAG's flows against the topology, classify them, number QPs, compile routes.

    Parameters
    ----------
    dag : the DAG arrays.
    topo : the network.
    routing : ``"hash"`` (our seeded ECMP hash) or ``"ns3"`` (exactly ns-3's choice).
    seed : seeds the ECMP hash.

    Raises
    ------
    NetsimInputError
        A flow from a rank to itself, a flow endpoint that is not a host of the topology, a
        compute node without a rank, or intra-server flows on a topology without NVLink.
    """
    kind = dag.kind
    src, dst = dag.src.astype(np.int64), dag.dst.astype(np.int64)
    is_flow = kind == KIND_FLOW
    check_flow_endpoints(kind, src, dst, NetsimInputError)
    if is_flow.any():
        fs, fd = src[is_flow], dst[is_flow]
        if fs.min() < 0 or fd.min() < 0 or fs.max() >= topo.n_nodes or fd.max() >= topo.n_nodes:
            raise NetsimInputError("a flow's src/dst rank is not a node of the topology")
        if topo.is_switch[fs].any() or topo.is_switch[fd].any():
            raise NetsimInputError("a flow starts or ends at a switch; ranks must be hosts")
    is_comp = kind == KIND_COMPUTE
    if is_comp.any() and dag.rank[is_comp].min() < 0:
        raise NetsimInputError("a compute node has no rank; set 'rank' >= 0")
    hs = topo.host_server.astype(np.int64)
    s0, d0 = np.clip(src, 0, None), np.clip(dst, 0, None)
    same_server = (hs[s0] >= 0) & (hs[s0] == hs[d0])
    instant = is_flow & (dag.size_bytes <= 0)
    nvlink = is_flow & ~instant & same_server
    fabric = is_flow & ~instant & ~same_server
    if nvlink.any() and topo.nvlink_rate_bps <= 0:
        raise NetsimInputError("intra-server flows need topo.nvlink_rate_bps > 0")
    flow_type = np.full(dag.n_nodes, FT_NONE, np.int8)
    flow_type[instant] = FT_INSTANT
    flow_type[nvlink] = FT_NVLINK
    flow_type[fabric] = FT_FABRIC
    qp_node = np.flatnonzero(fabric).astype(np.int64)
    flow_qp = np.full(dag.n_nodes, -1, np.int64)
    flow_qp[qp_node] = np.arange(qp_node.size)
    qp_src, qp_dst = src[qp_node], dst[qp_node]
    conn = None if dag.connection is None else dag.connection[qp_node].astype(np.int64)
    sport, r_off, r_ports = flow_routes(
        topo, qp_src, qp_dst, mode=routing, seed=seed, connection=conn
    )
    return FlowPlan(
        flow_type=flow_type,
        flow_qp=flow_qp,
        qp_node=qp_node,
        qp_src=qp_src,
        qp_dst=qp_dst,
        sport=np.asarray(sport, np.int64),
        r_off=np.asarray(r_off, np.int64),
        r_ports=np.asarray(r_ports, np.int64),
    )
