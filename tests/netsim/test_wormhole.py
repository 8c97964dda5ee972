"""Wormhole mode: fast-forward of steady partitions and skip-back
(wormsim.netsim.wormhole.counters)."""

from __future__ import annotations

import numpy as np
import pytest

from wormsim.memo import MemoStore
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

from .conftest import US, dag_of, star

WH = WormholeSpec()


def _fct(r, fn):
    return (r.node_finish_ps[fn] - r.node_start_ps[fn]).astype(np.float64)


def _conserved(r, dag, fn):
    """Every flow finished and delivered-by-packets + credited bytes = its size, exactly."""
    assert (r.node_finish_ps >= 0).all()
    qp = r.flow_qp[fn]
    size = dag.size_bytes[fn]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], size)


def _pair(cc, dag, topo):
    net = NetworkSpec(cc=cc)
    return run_packet(dag, topo, net), run_packet(dag, topo, net, wormhole=WH)


@pytest.mark.parametrize(("cc", "size"), [("hpcc", 50_000_000), ("dcqcn", 100_000_000)])
def test_lone_long_flow_is_mostly_skipped_with_exact_fct(cc, size):
    topo = star(2)
    dag, fn = dag_of([(0, 1)], size)
    r0, r = _pair(cc, dag, topo)
    c = r.counters
    assert c["skips"] >= 1 and c["steady_entries"] >= 1 and c["partitions_formed"] >= 1
    assert c["bytes_skipped"] >= 0.9 * size
    assert c["events_skipped_estimate"] > 0
    assert c["events_processed"] < 0.2 * r0.counters["events_processed"]
    np.testing.assert_allclose(_fct(r, fn), _fct(r0, fn), rtol=0.005)
    _conserved(r, dag, fn)


def test_flows_sharing_a_bottleneck():
    topo = star(5)
    dag, fn = dag_of([(0, 4), (1, 4), (2, 4), (3, 4)], 20_000_000)
    r0, r = _pair("hpcc", dag, topo)
    assert r.counters["skips"] > 0 and r.counters["bytes_skipped"] > 0
    np.testing.assert_allclose(_fct(r, fn), _fct(r0, fn), rtol=0.01)
    _conserved(r, dag, fn)


def test_a_rate_still_climbing_is_not_steady(tmp_path):
    """Eight window-limited DCTCP flows into one host: their rates climb ~3.5 % per window while
    their shares stay equal, and packet mode (as HPCC ns-3) breaks the symmetry later. The trend
    test keeps Wormhole simulating until the rates settle; without it the symmetric state is
    skipped and the mean FCT is several percent late."""
    topo = star(9)
    dag, fn = dag_of([(i, 8) for i in range(8)], 10_000_000)
    net = NetworkSpec(cc="dctcp")
    r0 = run_packet(dag, topo, net)
    runs = {
        trend: run_packet(
            dag,
            topo,
            net,
            wormhole=WormholeSpec(max_trend=trend),
            memo_store=MemoStore(tmp_path / f"m{trend}.sqlite"),
        )
        for trend in (0.025, 0.0)
    }
    f0 = np.sort(_fct(r0, fn))
    with_trend, without = (np.sort(_fct(runs[t], fn)) for t in (0.025, 0.0))
    assert abs(with_trend.mean() - f0.mean()) < 0.01 * f0.mean()
    np.testing.assert_allclose(with_trend, f0, rtol=0.02)  # sorted: the same spread of finishes
    assert abs(without.mean() - f0.mean()) > 0.03 * f0.mean()  # the case needs the test
    _conserved(runs[0.025], dag, fn)


def _skip_back_case():
    # flow 0 -> 2 (50 MB) is skipped from ~0.1 ms to ~3.8 ms; flow 1 -> 2 (2 MB, too short to be
    # fast-forwarded itself) starts at 1 ms onto the same bottleneck (host 2's downlink) and
    # must roll the skip back
    topo = star(3)
    fl = FlowSet(
        src=np.array([0, 1], np.int32),
        dst=np.array([2, 2], np.int32),
        pg=np.full(2, 3, np.int32),
        dport=np.full(2, 100, np.int32),
        size_bytes=np.array([50_000_000, 2_000_000], np.int64),
        start_ps=np.array([0, 1000 * US], np.int64),
    )
    dag, fn = flows_to_dag(fl)
    return dag, fn, *_pair("hpcc", dag, topo)


def test_skip_back_when_a_flow_joins_a_skipped_partition():
    dag, fn, r0, r = _skip_back_case()
    c = r.counters
    assert c["skips"] >= 1 and c["skip_backs"] >= 1
    np.testing.assert_allclose(_fct(r, fn)[0], _fct(r0, fn)[0], rtol=0.02)
    # the second flow really started mid-skip and shared the link (its FCT > alone at line rate)
    assert _fct(r, fn)[1] > 1.5 * 2_000_000 * 8 / 100e9 * 1e12
    _conserved(r, dag, fn)


@pytest.mark.xfail(
    strict=True, reason="known: the joining flow finishes ~6 % early after a skip-back (open)"
)
def test_skip_back_joining_flow_fct():
    dag, fn, r0, r = _skip_back_case()
    np.testing.assert_allclose(_fct(r, fn)[1], _fct(r0, fn)[1], rtol=0.02)


def test_detection_only_is_bit_identical_to_packet_mode():
    topo = star(5)
    dag, fn = dag_of([(0, 4), (1, 4), (2, 3)], 5_000_000)
    net = NetworkSpec(cc="hpcc")
    r0 = run_packet(dag, topo, net)
    r = run_packet(
        dag, topo, net, wormhole=WormholeSpec(fast_forward=False, memoize=False, window=5)
    )
    assert r.counters["steady_entries"] >= 1  # the detector ran and saw steady partitions
    assert r.counters["skips"] == 0 and r.counters["bytes_skipped"] == 0
    np.testing.assert_array_equal(r.node_start_ps, r0.node_start_ps)
    np.testing.assert_array_equal(r.node_finish_ps, r0.node_finish_ps)
    assert r.counters["data_packets_sent"] == r0.counters["data_packets_sent"]


def test_wormhole_is_deterministic(tmp_path):
    # same seed and same memo store contents (here: empty) -> same bytes
    topo = star(5)
    dag, fn = dag_of([(0, 4), (1, 4), (2, 4), (3, 4)], 20_000_000)
    net = NetworkSpec(cc="hpcc")
    a = run_packet(dag, topo, net, wormhole=WH, seed=3, memo_store=MemoStore(tmp_path / "a"))
    b = run_packet(dag, topo, net, wormhole=WH, seed=3, memo_store=MemoStore(tmp_path / "b"))
    np.testing.assert_array_equal(a.node_finish_ps, b.node_finish_ps)
    np.testing.assert_array_equal(a.qp_credit_bytes, b.qp_credit_bytes)
    for k in ("events_processed", "bytes_skipped", "skips", "steady_entries"):
        assert a.counters[k] == b.counters[k]


@pytest.mark.parametrize(
    ("cc", "ports"),
    [("hpcc", "data"), ("dcqcn", "data"), ("dctcp", "data_and_ack"), ("timely", "data_and_ack")],
)
def test_the_summary_records_what_the_engine_chose(cc, ports):
    """``partition_ports: auto`` (the default) resolves per congestion control, and the run
    says what it used: a user never has to tune it, and can always see it."""
    topo = star(3)
    dag, _ = dag_of([(0, 2), (1, 2)], 2_000_000)
    r = run_packet(dag, topo, NetworkSpec(cc=cc), wormhole=WormholeSpec(memo_mode="off"))
    chosen = r.summary("wormhole")["wormhole_choices"]
    assert chosen["partition_ports"] == ports
    assert chosen["steadiness"] == "range" and chosen["skip_unit"] == "partition"
    assert chosen["window_samples"] >= WormholeSpec().window  # DCQCN stretches it
    assert "wormhole_choices" not in run_packet(dag, topo, NetworkSpec(cc=cc)).summary("packet")
