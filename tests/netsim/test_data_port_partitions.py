"""Wormhole with data-port partitions: ACK-coupled flows are separate partitions, and the control
packets that cross a skipped partition's frozen ports are tunnelled or held
(packet/wormhole/tunnel.py)."""

from __future__ import annotations

import numpy as np
import pytest

from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

from .conftest import US, dag_of, star

SIZE = 30_000_000


def _fct(r, fn):
    return (r.node_finish_ps[fn] - r.node_start_ps[fn]).astype(np.float64)


def _ring(n: int):
    """A ring i -> i+1 on one switch: each host's uplink carries its data and the ACKs of the
    flow into it, so the flows are coupled through ACKs only."""
    return star(n), dag_of([(i, (i + 1) % n) for i in range(n)], SIZE)


@pytest.mark.parametrize("cc", ["hpcc", "timely"])
def test_ack_coupled_ring_splits_and_matches_packet_mode(cc):
    topo, (dag, fn) = _ring(4)
    net = NetworkSpec(cc=cc)
    ref = run_packet(dag, topo, net)
    both = run_packet(
        dag, topo, net, wormhole=WormholeSpec(memo_mode="off", partition_ports="data_and_ack")
    )
    data = run_packet(
        dag, topo, net, wormhole=WormholeSpec(memo_mode="off", partition_ports="data")
    )
    # coupled through ACKs: one partition of 4 with data+ACK ports, four of 1 with data ports
    assert data.counters["partitions_formed"] >= 4 > both.counters["partitions_formed"] - 1
    assert data.counters["skips"] >= 4
    assert (data.node_finish_ps >= 0).all()
    qp = data.flow_qp[fn]
    np.testing.assert_array_equal(
        data.qp_acked_bytes[qp] + data.qp_credit_bytes[qp], dag.size_bytes[fn]
    )
    np.testing.assert_allclose(_fct(data, fn), _fct(ref, fn), rtol=0.01)
    assert data.counters["events_processed"] < 0.2 * ref.counters["events_processed"]


def test_staggered_ring_keeps_each_flow_skipped():
    """Flows of a ring starting 50 µs apart: with data-port partitions a start elsewhere in the
    ring never resets or rolls back a skipped flow (no skip-backs), and FCTs stay exact."""
    topo = star(4)
    starts = np.array([0, 50_000_000, 100_000_000, 150_000_000], np.int64)
    net = NetworkSpec(cc="hpcc")
    delayed, fn2 = dag_of([(i, (i + 1) % 4) for i in range(4)], SIZE, start_ps=starts)
    ref = run_packet(delayed, topo, net)
    data = run_packet(
        delayed, topo, net, wormhole=WormholeSpec(memo_mode="off", partition_ports="data")
    )
    both = run_packet(
        delayed, topo, net, wormhole=WormholeSpec(memo_mode="off", partition_ports="data_and_ack")
    )
    assert data.counters["skip_backs"] == 0
    # the ACKs of flows still in their transient crossed the uplinks of skipped ones
    assert data.counters["control_tunnelled"] > 0
    assert data.counters["events_processed"] <= both.counters["events_processed"]
    np.testing.assert_allclose(_fct(data, fn2), _fct(ref, fn2), rtol=0.01)


def test_packet_mode_is_untouched_by_the_option():
    topo, (dag, fn) = _ring(3)
    net = NetworkSpec(cc="hpcc")
    a = run_packet(dag, topo, net)
    b = run_packet(
        dag,
        topo,
        net,
        wormhole=WormholeSpec(memo_mode="off", fast_forward=False, partition_ports="data"),
    )
    np.testing.assert_array_equal(a.node_finish_ps, b.node_finish_ps)
    assert b.counters["control_tunnelled"] == 0 == b.counters["control_deferred"]


def test_a_skip_does_not_hold_back_the_acks_crossing_its_ports():
    """Two hosts sending 2 MB flows to each other every 300 µs, the reverse stream ``phase`` µs
    behind: each direction is its own data-port partition, and each carries the other's ACKs.
    When one is skipped, the other's ACKs queued on or flying over its ports must go on (they
    are tunnelled past); frozen with the skip, a flow's last ACK waited for the skip to end and
    the flow finished 34 % late (phase 69 µs)."""
    topo = star(2)
    net = NetworkSpec(cc="hpcc")
    released = 0
    for phase in (46, 69, 115, 276):
        starts = [us * US for k in range(10) for us in (300 * k, 300 * k + phase)]
        dag, fn = dag_of([(0, 1), (1, 0)] * 10, 2_000_000, start_ps=np.array(starts, np.int64))
        ref = run_packet(dag, topo, net)
        wh = run_packet(
            dag, topo, net, wormhole=WormholeSpec(memo_mode="off", partition_ports="data")
        )
        assert wh.counters["skips"] >= 5
        released += wh.counters["control_released"]
        np.testing.assert_allclose(_fct(wh, fn), _fct(ref, fn), rtol=0.05)
    assert released > 0
