"""The steadiness test of a flow's window (``steady.ring_test``, ``WormholeSpec.steadiness``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.netsim.conftest import dag_of, star
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.packet.wormhole.steady import newest_half_mean, ring_test
from wormsim.netsim.wormhole.spec import WormholeSpec

W, THETA = 20, 0.05


def _stored(time_order: np.ndarray, n: int) -> np.ndarray:
    """A one-row ring holding ``time_order`` as the sampler leaves it after ``n`` writes."""
    ring = np.empty((1, W))
    for t in range(n - W, n):
        ring[0, t % W] = time_order[t - (n - W)]
    return ring


def _test(values: np.ndarray, n: int = 20, blocks: int = 4) -> bool:
    return bool(ring_test(_stored(values, n), 0, W, THETA, n, blocks)[0])


def test_a_stationary_oscillation_passes_blocks_but_not_range():
    osc = 1.0 + 0.04 * np.where(np.arange(W) % 2 == 0, 1.0, -1.0)  # +-4 %: range 8 % > 5 %
    assert not _test(osc, blocks=0)
    assert _test(osc, blocks=4)


@pytest.mark.parametrize("n", [20, 23, 37])
def test_a_trend_fails_blocks_wherever_the_ring_starts(n):
    ramp = np.linspace(1.0, 1.08, W)  # block means 1.01 ... 1.07: 6 % apart
    assert not _test(ramp, n)
    flat = np.full(W, 2.0)
    assert _test(flat, n)


@pytest.mark.parametrize("n", [21, 23, 38])
def test_blocks_are_taken_in_time_order(n):
    # a, b, a, b in time order (b 6 % above a): the block means differ by 6 %; cut at the
    # storage index instead, the blocks would mix a and b and look steady
    a, b = 1.0, 1.06
    alternating = np.repeat([a, b, a, b], W // 4)
    assert not _test(alternating, n)


def test_wider_swings_than_two_theta_fail_blocks():
    osc = 1.0 + 0.06 * np.where(np.arange(W) % 2 == 0, 1.0, -1.0)  # range 12 % > 10 %
    assert not _test(osc)


def test_blocks_still_fast_forward_a_lone_flow_exactly():
    topo = star(2)
    dag, fn = dag_of([(0, 1)], 50_000_000)
    net = NetworkSpec(cc="hpcc")
    ref = run_packet(dag, topo, net)
    r = run_packet(dag, topo, net, wormhole=WormholeSpec(steadiness="blocks", memo_mode="off"))
    assert r.counters["skips"] >= 1
    f0 = ref.node_finish_ps[fn] - ref.node_start_ps[fn]
    f1 = r.node_finish_ps[fn] - r.node_start_ps[fn]
    np.testing.assert_allclose(f1, f0, rtol=0.005)


@pytest.mark.parametrize("n", [20, 27, 33])
def test_the_credited_rate_is_the_newest_half_of_the_window_in_time_order(n):
    ramp = np.linspace(2.0, 1.0, W)  # still coming down to 1.0 when the window passes
    ring = _stored(ramp, n)
    assert newest_half_mean(ring, 0, W, n) == pytest.approx(ramp[W // 2 :].mean())


def test_a_lone_hpcc_flow_is_credited_where_its_rate_settled():
    """HPCC starts at line rate and settles to its target utilisation; the first window that
    passes the range test still holds part of the approach. Credited at the whole window's
    mean a lone 25 MB flow finished 0.085 % off packet mode; at its newest half's, 0.011 %."""
    dag, fn = dag_of([(0, 1)], 25_000_000)
    net = NetworkSpec(cc="hpcc")
    ref = run_packet(dag, star(2), net)
    r = run_packet(dag, star(2), net, wormhole=WormholeSpec(memo_mode="off"))
    assert r.counters["skips"] == 1
    fct = lambda x: float(x.node_finish_ps[fn][0] - x.node_start_ps[fn][0])  # noqa: E731
    assert abs(fct(r) / fct(ref) - 1) < 0.0003
