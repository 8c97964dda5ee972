"""Flow skips (``WormholeSpec.skip_unit="flow"``, :mod:`wormsim.netsim.packet.wormhole.flowskip`).

Each flow is fast-forwarded alone while its neighbours run packet by packet around its phantom
load; a neighbour starting or finishing on its data route rolls the skip back.
"""

from __future__ import annotations

import numpy as np
import pydantic
import pytest
from numba import njit

from tests.netsim.conftest import US, dag_of, star
from tests.netsim.packet._kit import heap_events, kit, port_of
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.core import push
from wormsim.netsim.packet.run import Monitors, run_packet
from wormsim.netsim.packet.wormhole.flowskip import _skip, fs_on_change, fs_on_start
from wormsim.netsim.wormhole.spec import WormholeSpec

FLOW = WormholeSpec(skip_unit="flow", memo_mode="off")


def _fct(r, fn):
    return (r.node_finish_ps[fn] - r.node_start_ps[fn]).astype(np.float64)


def _conserved(r, dag, fn):
    """Every flow finished and its bytes acked by packets + credited by skips = its size."""
    assert (r.node_finish_ps[fn] >= 0).all()
    qp = r.flow_qp[fn]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], dag.size_bytes[fn])


def _staggered(pairs_sizes_starts):
    n = len(pairs_sizes_starts)
    return flows_to_dag(
        FlowSet(
            src=np.array([a for (a, _), _, _ in pairs_sizes_starts], np.int32),
            dst=np.array([b for (_, b), _, _ in pairs_sizes_starts], np.int32),
            pg=np.full(n, 3, np.int32),
            dport=np.full(n, 100, np.int32),
            size_bytes=np.array([s for _, s, _ in pairs_sizes_starts], np.int64),
            start_ps=np.array([t for _, _, t in pairs_sizes_starts], np.int64),
        )
    )


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn", "dctcp"])
def test_a_lone_flow_is_skipped_with_its_fct(cc):
    dag, fn = dag_of([(0, 1)], 50_000_000)
    net = NetworkSpec(cc=cc)
    r0 = run_packet(dag, star(2), net)
    r = run_packet(dag, star(2), net, wormhole=FLOW)
    assert r.counters["skips"] >= 1
    assert r.counters["bytes_skipped"] >= 0.8 * 50_000_000
    assert r.counters["events_processed"] < 0.3 * r0.counters["events_processed"]
    np.testing.assert_allclose(_fct(r, fn), _fct(r0, fn), rtol=0.005)
    _conserved(r, dag, fn)


PARTITION = WormholeSpec(memo_mode="off")


def _three(dag, fn, net, topo, **kw):
    """FCTs of packet mode, partition skips and flow skips, and the flow-skip run."""
    r0 = run_packet(dag, topo, net)
    rp = run_packet(dag, topo, net, wormhole=PARTITION)
    rf = run_packet(dag, topo, net, wormhole=FLOW, **kw)
    return _fct(r0, fn), _fct(rp, fn), _fct(rf, fn), rf


def test_a_skipped_flow_keeps_its_share_and_a_finish_rolls_it_back():
    """Two HPCC flows into one host share its downlink; the short one finishes first. While
    skipped, each flow's phantom load keeps its share of the link (stretching the other's
    packets and counted by INT), so flow skips give the FCTs of partition skips, which freeze
    both rates at once. The short flow's finish rolls the long one's skip back, so the long one
    then takes the whole link as in packet mode: the link stays full and the long flow's FCT is
    packet mode's. (The short one is about 4 % late in both Wormhole modes: in packet mode
    HPCC's shares keep drifting, 52 -> 57 Gbit/s over a millisecond, where a skip holds them.)
    The rolled-back landing, planned at the shared rate, must not keep the run going."""
    dag, fn = _staggered([((0, 2), 40_000_000, 0), ((1, 2), 15_000_000, 0)])
    f0, fp, ff, r = _three(dag, fn, NetworkSpec(cc="hpcc"), star(3), monitors=Monitors(5 * US))
    c = r.counters
    assert c["skips"] >= 2 and c["skip_backs"] >= 1
    assert c["bytes_skipped"] > 0.5 * 55_000_000
    np.testing.assert_allclose(ff, fp, rtol=0.005)
    assert abs(ff[0] - f0[0]) < 0.005 * f0[0]
    assert abs(ff[1] - f0[1]) < 0.06 * f0[1]
    _conserved(r, dag, fn)
    assert c["sim_end_ps"] <= r.node_finish_ps[fn].max() + 2 * FLOW.sample_period_ns * 1000


def test_a_flow_starting_on_a_skipped_flows_port_rolls_it_back():
    """A long flow is skipped at line rate; a second flow then starts onto its bottleneck: the
    skip is rolled back to that moment, only the bytes of the elapsed time kept, and both flows
    share the link from there as with partition skips (where the join re-forms the partition);
    the link stays full, so the long flow ends when it does in packet mode."""
    dag, fn = _staggered([((0, 2), 40_000_000, 0), ((1, 2), 10_000_000, 600 * US)])
    f0, fp, ff, r = _three(dag, fn, NetworkSpec(cc="hpcc"), star(3))
    assert r.counters["skip_backs"] >= 1
    np.testing.assert_allclose(ff, fp, rtol=0.005)
    assert abs(ff[0] - f0[0]) < 0.005 * f0[0]
    _conserved(r, dag, fn)


def test_flow_skips_are_deterministic():
    dag, fn = dag_of([(0, 4), (1, 4), (2, 5), (3, 5)], 8_000_000)
    net = NetworkSpec(cc="hpcc")
    a, b = (run_packet(dag, star(6), net, wormhole=FLOW) for _ in range(2))
    np.testing.assert_array_equal(a.node_finish_ps, b.node_finish_ps)
    assert a.counters["events_processed"] == b.counters["events_processed"]


def test_skip_unit_is_validated():
    with pytest.raises(pydantic.ValidationError, match="skip_unit"):
        WormholeSpec(skip_unit="flows")


def test_flow_skips_are_refused_under_timely():
    dag, _ = dag_of([(0, 1)], 1_000_000)
    with pytest.raises(NetsimInputError, match="skip_unit = 'flow' does not work under"):
        run_packet(dag, star(2), NetworkSpec(cc="timely"), wormhole=FLOW)


@njit
def _start_and_skip(S_, P_, f, rate_Bpps, now):
    S, P = S_, st.raw_params(P_)
    S.cnt[st.C_NOW] = now
    fs_on_start(S, P, f, now)
    return _skip(S, P, f, rate_Bpps, now)


@njit
def _change(S_, P_, q, now):
    S, P = S_, st.raw_params(P_)
    S.cnt[st.C_NOW] = now
    fs_on_change(S, P, q, now)


def test_a_roll_back_leaves_the_events_of_its_ports_in_place():
    """A flow starting on a skipped flow's port rolls that skip back: the skipped flow's own
    timers move back by the skip's unelapsed part, and nothing else does. The port's pending
    events (here a transmission ending in 10 µs) stay where they are; they were once marked
    in the same scratch array as the timers and moved back with them, into the past."""
    k = kit(pairs=[(0, 2), (1, 2)], n_hosts=3, size=50_000_000, wormhole=FLOW)
    for q in (0, 1):
        k.start(q)
        k.nic_add(q)
    down = port_of(k.topo, 3, 2)  # the switch port down to host 2, on both flows' routes
    assert _start_and_skip(k.S, k.P, 0, 100e9 / 8e12, 0)
    assert k.A["fs_t1_ps"][0] > 100 * US
    _push(k.S, 10 * US, st.EV_TXDONE, down, down)
    _change(k.S, k.P, 1, 1 * US)
    assert k.A["fs_t1_ps"][0] == -1  # rolled back
    assert [t for t, _, _, o in heap_events(k.A) if o == down] == [10 * US]


@njit
def _push(S_, t, etype, arg, owner):
    push(S_, t, etype, arg, owner)
