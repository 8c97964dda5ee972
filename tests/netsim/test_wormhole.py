"""Wormhole mode: fast-forward of steady partitions and skip-back, and the run's plan
(wormsim.netsim.wormhole.plan)."""

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
    chosen = r.summary("wormhole")["wormhole_plan"]
    assert chosen["partition_ports"] == ports and chosen["partition_ports_setting"] == "auto"
    assert chosen["steadiness"] == "range" and chosen["skip_unit"] == "partition"
    assert chosen["window_samples"] >= WormholeSpec().window  # DCQCN stretches it
    assert chosen["memo_mode"] == "off" and not chosen["share_transients"]
    assert "wormhole_plan" not in run_packet(dag, topo, NetworkSpec(cc=cc)).summary("packet")


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn", "dctcp", "timely", "swift"])
def test_the_plan_follows_the_congestion_controls_registry_row(cc):
    """One place resolves what a run does under its congestion control: the partition ports,
    memo replay and the window that spans two of its longest rate-timer periods."""
    from wormsim.netsim.cc_registry import BY_NAME
    from wormsim.netsim.packet.wormhole.fields import WH_PARAMS
    from wormsim.netsim.packet.wormhole.handlers import WH_HANDLER_FIELDS
    from wormsim.netsim.wormhole.plan import plan_wormhole

    row, net, spec = BY_NAME[cc], NetworkSpec(cc=cc), WormholeSpec()
    plan = plan_wormhole(spec, net)
    assert plan.partition_ports == row.wormhole_ports
    assert plan.memo_replay == (row.memo_replay or spec.memo_replay_dcqcn)
    assert plan.rate_timers == row.timer_settings
    span_ps = 2 * max((getattr(net, f) for f in row.timer_settings), default=0) * 1_000_000
    assert plan.timer_span_ps == span_ps
    period = spec.sample_period_ns * 1000
    assert plan.sample_period_ps == period
    assert plan.window_samples == max(spec.window, -(-span_ps // period))
    assert (plan.window_samples - 1) * period < max(span_ps, spec.window * period)
    k = plan.kernel_params()
    linked = set(WH_HANDLER_FIELDS)  # addresses, filled when a run's parameters are built
    assert list(k) == [p.name for p in WH_PARAMS if p.name not in linked]
    assert k["wh_window"] == plan.window_samples and k["wh_ps"] == period
    assert k["wh_data_only"] == int(plan.partition_ports == "data")
    assert plan_wormhole(WormholeSpec(partition_ports="data_and_ack"), net).partition_ports == (
        "data_and_ack"
    )
    flows = plan_wormhole(WormholeSpec(skip_unit="flow"), net) if not row.delay_based else None
    if flows is not None:  # flow skips do not memoize, whatever memo_mode says
        assert flows.memo_mode == "off" and flows.kernel_params()["wh_memo_on"] is False


def test_summary_json_of_a_wormhole_run_holds_its_plan(tmp_path):
    """The run directory records the plan as resolved: DCQCN's window spans two of its
    longest rate-timer periods (RP timer, alpha resume, rate decrease), its ports are the data
    ports under ``auto``; the units are in the keys."""
    import json

    from wormsim.netsim.stage import SUMMARY_FILE, run_scenario_dir

    d = "tests/data/ns3/fattree4-perm/hp"
    spec = WormholeSpec(memo_path=str(tmp_path / "memo.sqlite"))
    out = tmp_path / "out"
    run_scenario_dir(
        f"{d}/topology.txt", f"{d}/flow.txt", out, f"{d}/config.txt", cc="dcqcn",
        mode="wormhole", wormhole=spec, argv=[],
    )  # fmt: skip
    plan = json.loads((out / SUMMARY_FILE).read_text())["wormhole_plan"]
    net = NetworkSpec(cc="dcqcn")
    longest_us = max(net.rp_timer_us, net.alpha_resume_interval_us, net.rate_decrease_interval_us)
    assert plan["cc"] == "dcqcn" and plan["partition_ports"] == "data"
    assert plan["timer_span_ps"] == 2 * longest_us * 1_000_000
    assert plan["window_samples"] * plan["sample_period_ps"] >= plan["timer_span_ps"]
    assert plan["window_samples"] > spec.window
    assert plan["kernel_params"]["wh_window"] == plan["window_samples"]
    assert plan["memo_mode"] == "readwrite" and plan["memo_governor"]["window_lookups"] > 0
