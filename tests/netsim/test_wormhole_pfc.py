"""Wormhole under PFC: a skip must not carry a rate across a pause it did not see.

A 32-to-1 incast of 2 MB flows through one switch with a 2 MiB buffer pauses every sender again
and again. Its flows' delivered rates then hold pauses: skipped on such a window (before the
pause gate, under DCTCP) the incast finished 6.7 % late on average and one flow 24 % late. The
steadiness test now refuses a window in which a pause reached a flow's data route, and a pause
reaching a skipped flow's port rolls the skip back.
"""

from __future__ import annotations

import numpy as np
import pytest

from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

from .conftest import US, dag_of, star

SENDERS = 32
SIZE = 2_000_000


def _fct(r, fn) -> np.ndarray:
    return (r.node_finish_ps[fn] - r.node_start_ps[fn]).astype(np.float64)


def _incast(cc: str, tmp_path):
    """Packet and Wormhole (defaults, fresh store) runs of the 32-to-1 incast under ``cc``."""
    topo = star(SENDERS + 1)
    dag, fn = dag_of([(i, SENDERS) for i in range(SENDERS)], SIZE)
    net = NetworkSpec(cc=cc, buffer_size_mb=2.0)
    ref = run_packet(dag, topo, net)
    wh = run_packet(dag, topo, net, wormhole=WormholeSpec(memo_path=str(tmp_path / "m.sqlite")))
    return fn, ref, wh


@pytest.mark.parametrize("cc", ["dctcp", "hpcc", "dcqcn", "timely"])
def test_a_pfc_heavy_incast_keeps_packet_modes_fcts(cc, tmp_path):
    fn, ref, wh = _incast(cc, tmp_path)
    assert ref.counters["pfc_pauses"] >= SENDERS  # the premise: PFC pauses the senders
    assert (wh.node_finish_ps[fn] > 0).all()
    err = np.abs(_fct(wh, fn) - _fct(ref, fn)) / _fct(ref, fn)
    assert err.mean() < 0.005 and err.max() < 0.02
    assert wh.counters["events_processed"] < 1.05 * ref.counters["events_processed"]


def test_the_sampler_sleeps_while_no_flow_is_active():
    """Two flows 2 ms apart: the sampler ticks while a flow is active, not in the gap (it cost
    one event per 5 µs of simulated time with nothing to sample: 400,000 events before an HPCC
    scenario's flows start at 2 s), and wakes on its grid, so the run is the same."""
    topo = star(3)
    dag, fn = dag_of([(0, 2)], 1_000_000)
    late, fn2 = dag_of([(1, 2)], 1_000_000, start_ps=2000 * US)
    net = NetworkSpec(cc="hpcc")
    spec = WormholeSpec(fast_forward=False, memo_mode="off")
    for d, f in ((dag, fn), (late, fn2)):
        ref = run_packet(d, topo, net)
        r = run_packet(d, topo, net, wormhole=spec)
        np.testing.assert_array_equal(r.node_finish_ps, ref.node_finish_ps)
        fct_ticks = _fct(ref, f).sum() / (WormholeSpec().sample_period_ns * 1000)
        assert r.counters["events_processed"] - ref.counters["events_processed"] < fct_ticks + 4
