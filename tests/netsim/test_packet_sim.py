"""``packet_sim``'s state build: the per-QP base RTT Wormhole keys and credits with."""

from __future__ import annotations

import numpy as np
import pytest

from wormsim.netsim.common.flow_plan import plan_flows
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import _base_rtts, _params

from .conftest import US, dag_of, star


def _rtts_one_route_at_a_time(topo, r_off, r_ports, nq, P):
    """The definition, a route at a time: delays plus one data packet's (data route) and one
    ACK's (ACK route) serialization per port, each sum truncated to whole picoseconds."""
    out = np.zeros(nq, np.int64)
    data_b = P.mtu + P.hdr_bytes + P.int_bytes
    for q in range(nq):
        d = r_ports[r_off[2 * q] : r_off[2 * q + 1]]
        a = r_ports[r_off[2 * q + 1] : r_off[2 * q + 2]]
        t = int(topo.port_delay_ps[d].sum() + topo.port_delay_ps[a].sum())
        t += int((data_b * 8e12 / topo.port_rate_bps[d]).sum())
        t += int((P.ack_bytes * 8e12 / topo.port_rate_bps[a]).sum())
        out[q] = t
    return out


def test_a_one_switch_rtt_is_four_delays_and_two_of_each_packet():
    topo = star(2, rate=100e9, delay_ps=US)
    dag, _ = dag_of([(0, 1)], 1_000_000)
    plan = plan_flows(dag, topo, routing="hash", seed=0)
    P = _params(NetworkSpec(cc="dcqcn"), topo, 0, None)
    got = _base_rtts(topo, plan.r_off, plan.r_ports, plan.n_qps, P)
    data_ps = (P.mtu + P.hdr_bytes + P.int_bytes) * 8e12 / 100e9
    ack_ps = P.ack_bytes * 8e12 / 100e9
    assert got.tolist() == [4 * US + int(2 * data_ps) + int(2 * ack_ps)]


@pytest.mark.parametrize(
    "cluster",
    [
        ClusterSpec(gpus=64, gpus_per_node=8, topology="fat_tree"),
        ClusterSpec(gpus=64, gpus_per_node=8, topology="clos", hosts_per_leaf=4),
        ClusterSpec(gpus=64, gpus_per_node=8, topology="rail_optimized"),
    ],
    ids=["fat_tree", "clos", "rail"],
)
def test_base_rtts_equal_the_definition_on_every_route(cluster):
    topo = build_topology(cluster)
    rng = np.random.default_rng(1)
    pairs = [(int(a), int(b)) for a, b in rng.integers(0, 64, (400, 2)) if a // 8 != b // 8]
    dag, _ = dag_of(pairs, 1_000_000)
    plan = plan_flows(dag, topo, routing="hash", seed=0)
    P = _params(NetworkSpec(cc="hpcc"), topo, 0, None)
    got = _base_rtts(topo, plan.r_off, plan.r_ports, plan.n_qps, P)
    want = _rtts_one_route_at_a_time(topo, plan.r_off, plan.r_ports, plan.n_qps, P)
    assert plan.n_qps == len(pairs)
    assert np.diff(plan.r_off).max() >= 3  # multi-hop routes
    np.testing.assert_array_equal(got, want)
