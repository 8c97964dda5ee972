"""Compile a DAG, topology and network config into the flow engine's arrays.

Resources are the directed fabric ports ``0 .. n_ports-1`` (capacity: the port's usable rate)
and per host ``h`` an NVLink egress ``n_ports + h`` and ingress ``n_ports + n_nodes + h``;
each flow's resource list and latency come from the routes of
:func:`~wormsim.netsim.common.flow_plan.plan_flows`, the same as the packet engine's. Rates
bytes/ps.
"""

from __future__ import annotations

import numpy as np

from wormsim.collective.dag import DagArrays
from wormsim.netsim.common.dag_runtime import dag_runtime_arrays, n_ranks
from wormsim.netsim.common.flow_plan import FT_FABRIC, FT_NVLINK, plan_flows
from wormsim.netsim.common.jit import njit
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.flow.fields import STATE_TABLE
from wormsim.netsim.flow.state import C_RECORD, F_THETA
from wormsim.netsim.network_config import FRAME_HEADER_BYTES, INT_HEADER_BYTES, NetworkSpec
from wormsim.units import (
    BPS_PER_BYTE_PER_NS_INT,
    BPS_PER_BYTE_PER_PS,
    BPS_PER_BYTE_PER_PS_INT,
    PS_PER_NS,
)

__all__ = ["build_arrays", "flow_wire_bytes", "BASE_HEADER_BYTES"]

BASE_HEADER_BYTES = FRAME_HEADER_BYTES
"""Per-packet header bytes the packet engine sends besides INT (ns-3's 14 PPP + 20 IPv4 + 8 UDP +
6 seq)."""


@njit(cache=True)
def _build_res(
    nodes,
    ftype,
    qidx,
    r_off,
    r_ports,
    src,
    dst,
    n_ports,
    n_nodes,
    p_delay_ps,
    p_ser,
    f_roff,
    f_res,
    inc_flow,
    f_lat_ps,
):
    """Fill each flow node's resource list and its latency."""
    for i in range(nodes.shape[0]):
        v = nodes[i]
        o = f_roff[v]
        if ftype[v] == FT_FABRIC:
            q = qidx[v]
            lat = 0
            for j in range(r_off[2 * q], r_off[2 * q + 1]):
                p = r_ports[j]
                f_res[o] = p
                inc_flow[o] = v
                o += 1
                lat += p_delay_ps[p] + p_ser[p]
            for j in range(r_off[2 * q + 1], r_off[2 * q + 2]):
                lat += p_delay_ps[r_ports[j]]
            f_lat_ps[v] = lat
        else:
            f_res[o] = n_ports + src[v]
            f_res[o + 1] = n_ports + n_nodes + dst[v]
            inc_flow[o] = v
            inc_flow[o + 1] = v


def flow_wire_bytes(size_bytes: np.ndarray | int, payload: int, header: int) -> np.ndarray:
    """Bytes on the wire of a flow: ``size + ceil(size / payload) * header``."""
    s = np.asarray(size_bytes, np.int64)
    return s + (s + payload - 1) // payload * header


def build_arrays(
    dag: DagArrays,
    topo: Topology,
    net: NetworkSpec,
    routing: str,
    seed: int,
    header_bytes: int | None,
    log_capacity: int,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The flow kernel's arrays for one run, and the flows' QPs and source ports.

    Parameters
    ----------
    dag, topo, net : the flow DAG, the network and its configuration.
    routing, seed : route choice, as in :func:`~wormsim.netsim.common.flow_plan.plan_flows`.
    header_bytes : per-packet header bytes on the wire (``None``: 36 + INT bytes of ``net.cc``).
    log_capacity : initial rate-log entries (0: no rate log).

    Returns
    -------
    arrays : every field of :data:`~wormsim.netsim.flow.fields.STATE_TABLE` at its declared
        dtype and shape, plus the compiled routes ``r_off``, ``r_ports`` (not kernel state).
    flow_qp, sport : per DAG node its QP (-1 = none) and per QP its source port.
    """
    n = dag.n_nodes
    src, dst = dag.src.astype(np.int64), dag.dst.astype(np.int64)
    size = dag.size_bytes.astype(np.int64)
    # the same flows, QPs and routes as the packet engine (same flow order, sports and seed)
    plan = plan_flows(dag, topo, routing=routing, seed=seed)
    ftype = plan.flow_type
    nv, fab = ftype == FT_NVLINK, ftype == FT_FABRIC
    qp_nodes, flow_qp, sport = plan.qp_node, plan.flow_qp, plan.sport
    nq = plan.n_qps
    r_off, r_ports = plan.r_off, plan.r_ports

    payload = int(net.payload_size_bytes)
    header = (
        BASE_HEADER_BYTES + INT_HEADER_BYTES[net.cc] if header_bytes is None else int(header_bytes)
    )
    rate = topo.port_rate_bps.astype(np.int64)
    p_ser = payload * BPS_PER_BYTE_PER_PS_INT // rate
    eff = rate.astype(np.float64)
    if net.ns3_truncate_tx_ns:
        w = payload + header
        ser_ns = w * BPS_PER_BYTE_PER_NS_INT // rate
        eff = np.where(ser_ns > 0, w * BPS_PER_BYTE_PER_PS / np.maximum(ser_ns * PS_PER_NS, 1), eff)
    n_ports, n_nodes = topo.n_ports, topo.n_nodes
    res_cap_Bpps = np.empty(n_ports + 2 * n_nodes, np.float64)
    res_cap_Bpps[:n_ports] = eff / BPS_PER_BYTE_PER_PS
    res_cap_Bpps[n_ports:] = float(topo.nvlink_rate_bps) / BPS_PER_BYTE_PER_PS

    nres_per = np.zeros(n, np.int64)
    if nq:
        nres_per[qp_nodes] = r_off[2 * np.arange(nq) + 1] - r_off[2 * np.arange(nq)]
    nres_per[nv] = 2
    f_roff = np.zeros(n + 1, np.int64)
    np.cumsum(nres_per, out=f_roff[1:])
    m = int(f_roff[-1])
    f_res = np.zeros(m, np.int64)
    inc_flow = np.zeros(m, np.int64)
    f_lat_ps = np.zeros(n, np.int64)
    _build_res(
        np.flatnonzero(fab | nv).astype(np.int64),
        ftype,
        flow_qp,
        r_off,
        r_ports,
        src,
        dst,
        n_ports,
        n_nodes,
        topo.port_delay_ps.astype(np.int64),
        p_ser,
        f_roff,
        f_res,
        inc_flow,
        f_lat_ps,
    )
    f_wire = np.zeros(n, np.float64)
    f_wire[fab] = flow_wire_bytes(size[fab], payload, header)
    f_wire[nv] = size[nv]

    sizes = {
        "dag_node": n,
        "dag_edge": dag.child_index.shape[0],
        "rank": n_ranks(dag),
        "resource": n_ports + 2 * n_nodes,
        "incidence": m,
        "flow": int(np.count_nonzero(fab | nv)),
        "log": max(log_capacity, 1),
    }
    # every field with a constant initial value, at its declared dtype and shape; then the
    # fields built from the scenario (``init=None`` in the table)
    arrays = STATE_TABLE.allocate(sizes)
    arrays.update(
        **dag_runtime_arrays(dag),
        f_type=ftype,
        f_wire=f_wire,
        f_lat_ps=f_lat_ps,
        f_roff=f_roff,
        f_res=f_res,
        res_cap_Bpps=res_cap_Bpps,
        inc_flow=inc_flow,
    )
    arrays["cnt"][C_RECORD] = 1 if log_capacity > 0 else 0
    arrays["fsc"][F_THETA] = np.inf
    STATE_TABLE.check(arrays, sizes)  # every field, at its declared dtype and shape
    # not kernel state (``state.NOT_STATE``): the compiled routes, returned to the caller
    arrays.update(r_off=r_off, r_ports=r_ports)
    return arrays, flow_qp, sport
