"""Moving a partition through time (:mod:`wormsim.netsim.packet.wormhole.skip`): the tail a
skip leaves."""

from __future__ import annotations

import numpy as np

from tests.netsim.conftest import US, dag_of, star
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

MB = 1 << 20


def test_a_skip_never_lands_inside_the_flight_of_a_deep_queue():
    """Four 20 MB DCTCP flows into one host: the queue holds more than a base RTT of data, so
    two base RTTs of bytes at the skip's rate are less than a flow has in flight. A skip that
    stopped there would be credited only up to its last unsent packet but moved through the
    whole time: every flow finished 9.4 us late. The tail is now at least the flight."""
    dag, flows = dag_of([(1, 0), (2, 0), (3, 0), (4, 0)], 20 * MB)
    topo, net = star(5), NetworkSpec(cc="dctcp")
    ref = run_packet(dag, topo, net)
    r = run_packet(dag, topo, net, wormhole=WormholeSpec(memo_mode="off"))
    assert r.counters["skips"] >= 1
    late = (r.node_finish_ps - ref.node_finish_ps)[flows]
    assert np.abs(late).max() < 1 * US
