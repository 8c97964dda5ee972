"""Shared transients: partitions that miss the memo at the same tick with the same contention
pattern simulate one transient (the leader) and park the rest
(wormsim.netsim.packet.wormhole.wh)."""

from __future__ import annotations

import numpy as np
import pytest

from wormsim.collective.dag import DagArrays
from wormsim.memo import MemoStore
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

from .conftest import US, flowset, star

MB = 1_000_000
SHARE = WormholeSpec(share_transients=True)
NO_SHARE = WormholeSpec(share_transients=False)


def _incasts(groups: int, fan_in: int, extra: list[tuple[int, int, int]] = ()):
    """``groups`` identical ``fan_in`` -> 1 incasts of 20 MB flows at t = 0 on disjoint hosts of
    one switch (group g uses hosts 5g .. 5g + 4, receiver 5g + 4), plus ``extra`` flows
    ``(src, dst, start_ps)`` of 5 MB."""
    src = [5 * g + i for g in range(groups) for i in range(fan_in)]
    dst = [5 * g + 4 for g in range(groups) for _ in range(fan_in)]
    start = [0] * len(src)
    size = [20 * MB] * len(src)
    for a, b, t in extra:
        src.append(a)
        dst.append(b)
        start.append(t)
        size.append(5 * MB)
    n = len(src)
    fl = FlowSet(
        src=np.array(src, np.int32),
        dst=np.array(dst, np.int32),
        pg=np.full(n, 3, np.int32),
        dport=np.full(n, 100, np.int32),
        size_bytes=np.array(size, np.int64),
        start_ps=np.array(start, np.int64),
    )
    dag, fn = flows_to_dag(fl)
    return dag, fn, star(5 * groups + 1)


def _run(dag, topo, net, spec, tmp_path, name="m.sqlite"):
    with MemoStore(tmp_path / name) as store:
        return run_packet(dag, topo, net, wormhole=spec, memo_store=store)


def _fct(r, fn):
    return (r.node_finish_ps[fn] - r.node_start_ps[fn]).astype(np.float64)


def _conserved(r, dag, fn):
    assert (r.node_finish_ps[fn] >= 0).all(), "a flow never finished"
    qp = r.flow_qp[fn]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], dag.size_bytes[fn])


@pytest.mark.parametrize(("cc", "fan_in"), [("hpcc", 1), ("hpcc", 2), ("timely", 1)])
def test_isomorphic_simultaneous_partitions_share_one_simulated_transient(tmp_path, cc, fan_in):
    groups = 3
    dag, fn, topo = _incasts(groups, fan_in)
    net = NetworkSpec(cc=cc)
    ref = run_packet(dag, topo, net)
    alone = _run(dag, topo, net, NO_SHARE, tmp_path, "a.sqlite")
    shared = _run(dag, topo, net, SHARE, tmp_path, "b.sqlite")
    c = shared.counters
    # the three incasts form at the same tick: one is simulated, two are parked behind it and
    # replay its transient once it settles
    assert c["parked"] >= groups - 1
    assert alone.counters["parked"] == 0
    assert c["events_processed"] < 0.8 * alone.counters["events_processed"]
    for r in (alone, shared):
        _conserved(r, dag, fn)
    err = np.abs(_fct(shared, fn) - _fct(ref, fn)) / _fct(ref, fn)
    err_alone = np.abs(_fct(alone, fn) - _fct(ref, fn)) / _fct(ref, fn)
    # followers finish as in packet mode, as closely as simulating their own transient did
    # (HPCC's two-flow incast splits 42/53 Gbit/s and the split wanders between 37/58 and 41/54
    # over milliseconds; the 100-us window freezes one phase of it: 4.1 % on one flow with or
    # without shadows; a 200-us window gives 2.9 % at 2.2x the events)
    assert err.max() <= err_alone.max() + 0.005
    assert err.max() < (0.01 if fan_in == 1 else 0.05)


def test_followers_of_a_leader_that_never_settles_mirror_it(tmp_path):
    # TIMELY's two-flow incast on this switch never becomes steady: the leader runs to its end,
    # and when its flows finish the followers take its progress and finish packet by packet
    dag, fn, topo = _incasts(3, 2)
    net = NetworkSpec(cc="timely")
    ref = run_packet(dag, topo, net)
    alone = _run(dag, topo, net, NO_SHARE, tmp_path, "a.sqlite")
    r = _run(dag, topo, net, SHARE, tmp_path, "b.sqlite")
    assert alone.counters["skips"] == 0
    assert r.counters["parked"] >= 2
    assert r.counters["parked_released"] == r.counters["parked"]
    assert r.counters["events_processed"] < 0.5 * alone.counters["events_processed"]
    _conserved(r, dag, fn)
    err = np.abs(_fct(r, fn) - _fct(ref, fn)) / _fct(ref, fn)
    assert err.max() < 0.01


def _errors(dag, fn, topo, net, tmp_path, ports="data"):
    ref = run_packet(dag, topo, net)
    alone = _run(
        dag, topo, net, NO_SHARE.model_copy(update={"partition_ports": ports}), tmp_path,
        "a.sqlite",
    )  # fmt: skip
    shared = _run(
        dag, topo, net, SHARE.model_copy(update={"partition_ports": ports}), tmp_path,
        "b.sqlite",
    )  # fmt: skip
    _conserved(shared, dag, fn)

    def err(r):
        return np.abs(_fct(r, fn) - _fct(ref, fn)) / _fct(ref, fn)

    return shared, err(shared), err(alone)


@pytest.mark.parametrize(
    "cc",
    [
        pytest.param(
            "hpcc",
            marks=pytest.mark.xfail(
                strict=True,
                reason="known: the materialised shadow resumes the packets it had in flight "
                "when it was parked (48 KB of its start burst, sent at line rate), not the "
                "paced ones its leader has; the HPCC joiner then splits 51/43 Gbit/s instead of "
                "49/45.5 and finishes 7.1 % early (1.6 % without shadows; docs/wormhole.md)",
            ),
        ),
        "dctcp",
    ],
)
def test_a_shadow_touched_by_a_new_flow_is_materialised(tmp_path, cc):
    # group 1's receiver gets a second sender 60 us in, while group 1 shadows group 0
    dag, fn, topo = _incasts(2, 1, extra=[(7, 9, 60 * US)])
    r, err, err_alone = _errors(dag, fn, topo, NetworkSpec(cc=cc), tmp_path)
    assert r.counters["parked"] >= 1
    assert r.counters["shadow_flows_held"] == 1  # the joiner waited for the next pass
    assert r.counters["parked_released"] >= 1  # and its shadow was brought back
    assert err.max() <= err_alone.max() + 0.01
    assert err.max() < 0.02


@pytest.mark.parametrize("cc", ["hpcc", "dctcp"])
def test_a_shadow_whose_leader_changes_alone_is_materialised(tmp_path, cc):
    # the leader (group 0, the lowest QPs) gets a second sender 60 us in; its shadow does not
    dag, fn, topo = _incasts(2, 1, extra=[(2, 4, 60 * US)])
    r, err, err_alone = _errors(dag, fn, topo, NetworkSpec(cc=cc), tmp_path)
    assert r.counters["parked"] >= 1
    assert r.counters["parked_released"] >= 1
    assert err.max() <= err_alone.max() + 0.01
    assert err.max() < 0.02


def _rings(
    groups: int, hosts: int = 4, sizes: tuple[int, ...] = (4 * MB, 4 * MB, 4 * MB),
    skew: float = 0.0,
):  # fmt: skip
    """``groups`` identical rings of ``hosts`` hosts on one switch, one step per entry of
    ``sizes`` (its flows' bytes): the step-k flow of a rank waits for the step-(k-1) flows into
    and out of it (as NCCL's ring all-reduce does), so rings re-form at every step. With
    ``skew`` rank i's flows are ``1 + skew * i`` times as long and wait only for the rank's own
    previous flow, so each ring changes one flow at a time."""
    steps = len(sizes)
    kind, src, dst, size_b, deps = [], [], [], [], []
    node = {}
    for g in range(groups):
        base = g * (hosts + 1)
        for k in range(steps):
            for i in range(hosts):
                node[g, k, i] = len(kind)
                kind.append(0)
                src.append(base + i)
                dst.append(base + (i + 1) % hosts)
                size_b.append(int(sizes[k] * (1 + skew * i)))
                prev = [node[g, k - 1, i]] if k else []
                if k and not skew:
                    prev.append(node[g, k - 1, (i - 1) % hosts])
                deps.append(prev)
    n = len(kind)
    parents = sorted((p, c) for c, ds in enumerate(deps) for p in ds)
    offs = np.zeros(n + 1, np.int64)
    for p, _ in parents:
        offs[p + 1] += 1
    dag = DagArrays(
        kind=np.array(kind, np.int8),
        src=np.array(src, np.int32),
        dst=np.array(dst, np.int32),
        rank=np.full(n, -1, np.int32),
        size_bytes=np.array(size_b, np.int64),
        duration_ps=np.zeros(n, np.int64),
        dep_count=np.array([len(d) for d in deps], np.int32),
        child_offsets=np.cumsum(offs),
        child_index=np.array([c for _, c in parents], np.int64),
    )
    return dag, np.arange(n), star(groups * (hosts + 1))


@pytest.mark.parametrize("cc", ["hpcc", "timely"])
@pytest.mark.parametrize("later", [4 * MB, MB // 2])
def test_shadow_rings_follow_their_leader_through_every_step(tmp_path, cc, later):
    groups, hosts, sizes = 3, 4, (4 * MB, later, later)
    dag, fn, topo = _rings(groups, hosts, sizes)
    r, err, err_alone = _errors(dag, fn, topo, NetworkSpec(cc=cc), tmp_path)
    c = r.counters
    alone = _run(dag, topo, NetworkSpec(cc=cc), NO_SHARE, tmp_path, "c.sqlite")
    # the shadows finish every flow with their leader's and hold the next step's flows, which
    # start when the leader's do (or, once the leader is fast-forwarded, skip with it); later
    # steps as long as the first replay its memo entry, and shorter ones (the entry does not
    # fit) are simulated once and shadowed again
    assert c["parked"] >= groups - 1
    assert c["shadow_flows_mirrored"] >= (groups - 1) * hosts
    assert c["events_processed"] < 0.6 * alone.counters["events_processed"]
    fin = r.node_finish_ps[fn].reshape(groups, len(sizes) * hosts).astype(float)
    lead = np.broadcast_to(fin[0], fin[1:].shape)
    np.testing.assert_allclose(fin[1:], lead, rtol=1e-3)  # shadowed (or re-shadowed) all along
    assert err.max() <= err_alone.max() + 0.01


def test_a_shadow_is_remapped_when_its_leader_changes_one_flow_at_a_time(tmp_path):
    # HPCC on these 0.5-2.5 MB flows never fast-forwards: the shadows follow their leader
    # through every re-formation (data and ACK ports make each ring one partition, which
    # re-forms whenever one of its flows changes)
    cc = "hpcc"
    groups, hosts = 3, 4
    dag, fn, topo = _rings(groups, hosts, (2 * MB, MB // 2, MB // 2), skew=0.25)
    r, err, err_alone = _errors(dag, fn, topo, NetworkSpec(cc=cc), tmp_path, "data_and_ack")
    c = r.counters
    assert c["shadows_remapped"] >= groups - 1
    fin = r.node_finish_ps[fn].reshape(groups, 3 * hosts)
    np.testing.assert_array_equal(fin[1:], np.broadcast_to(fin[0], fin[1:].shape))
    assert err.max() <= err_alone.max() + 0.01


def test_flows_of_other_sizes_are_not_parked(tmp_path):
    dag, fn, topo = _incasts(2, 1)
    dag.size_bytes[fn[1]] = 2 * dag.size_bytes[fn[0]]  # same pattern, the second twice as long
    r = _run(dag, topo, NetworkSpec(cc="hpcc"), SHARE, tmp_path)
    assert r.counters["parked"] == 0
    _conserved(r, dag, fn)


def test_shared_transients_are_deterministic(tmp_path):
    dag, fn, topo = _incasts(3, 2)
    net = NetworkSpec(cc="hpcc")
    a = _run(dag, topo, net, SHARE, tmp_path, "a.sqlite")
    b = _run(dag, topo, net, SHARE, tmp_path, "b.sqlite")
    np.testing.assert_array_equal(a.node_finish_ps, b.node_finish_ps)
    assert a.counters["events_processed"] == b.counters["events_processed"]


def _two_channel_rings(groups: int, hosts: int, size: int):
    """``groups`` rings of ``hosts`` hosts on one switch, each rank sending two flows (two NCCL
    channels) of ``size`` bytes to the next at t = 0."""
    pairs = [
        (g * hosts + i, g * hosts + (i + 1) % hosts)
        for g in range(groups)
        for i in range(hosts)
        for _ in range(2)
    ]
    fl = flowset(pairs, size)
    dag, fn = flows_to_dag(fl)
    return dag, fn, star(groups * hosts)


@pytest.mark.parametrize("cc", ["hpcc", "timely", "dctcp"])
def test_shadow_rings_with_data_port_partitions_keep_their_ack_load(tmp_path, cc):
    """With data-port partitions each rank's two channel flows are one partition, and all of
    them (three rings x four ranks) form at one tick with one pattern: one leader, eleven
    shadows. The leader's uplink also carries the ACKs of the flows into it, which belong to a
    parked shadow: the shadow keeps that ACK load at its leader's rate, so the leader runs as in
    packet mode (on GPT-13B/128 it ran 6.5 % fast without the load and 9.9 % slow with the load
    frozen at the flows' start rate). The load holds the port for the ACKs' serialization time
    in whole nanoseconds, as real ACKs do (4 ns per 60-byte ACK at 100 Gbit/s, not 4.8): with
    the exact time the leader ran 0.8 % slow under DCTCP and TIMELY."""
    groups, hosts = 3, 4
    dag, fn, topo = _two_channel_rings(groups, hosts, 20 * MB)
    net = NetworkSpec(cc=cc)
    ref = run_packet(dag, topo, net)
    r = _run(dag, topo, net, WormholeSpec(partition_ports="data"), tmp_path)
    alone = _run(
        dag, topo, net, WormholeSpec(partition_ports="data", share_transients=False), tmp_path,
        "a.sqlite",
    )  # fmt: skip
    assert r.counters["parked"] >= groups * hosts - 1
    _conserved(r, dag, fn)
    err = np.abs(_fct(r, fn) - _fct(ref, fn)) / _fct(ref, fn)
    err_alone = np.abs(_fct(alone, fn) - _fct(ref, fn)) / _fct(ref, fn)
    # measured: HPCC 0.24 % (0.09 % unshared), TIMELY 0.12 % (0.08 %; 0.77 % with the exact ACK
    # time, 6.7 % before the shadows kept their ACK load), DCTCP 0.11 % (0.08 %; 0.79 %)
    assert err.max() <= err_alone.max() + 0.003
    assert err.max() < 0.005


def test_a_partition_that_started_earlier_does_not_follow_a_later_leader(tmp_path):
    """Neither flow has an ACK back at the first tick (3 us links), so their acknowledged bytes
    agree; the second started 1 us earlier and has 12 KB more on the wire. Parked behind the
    first, it finished with it, 1 us late (2 % here; 17 % on GPT-22B/256 at 1 % message size):
    a follower must match its leader's bytes in flight too."""
    for lag in (0, US // 2, US):
        fl = FlowSet(
            src=np.array([0, 2], np.int32),
            dst=np.array([1, 3], np.int32),
            pg=np.full(2, 3, np.int32),
            dport=np.full(2, 100, np.int32),
            size_bytes=np.full(2, 400_000, np.int64),
            start_ps=np.array([2 * US, 2 * US - lag], np.int64),
        )
        dag, fn = flows_to_dag(fl)
        topo = star(4, delay_ps=3 * US)
        net = NetworkSpec(cc="hpcc")
        ref = run_packet(dag, topo, net)
        r = _run(dag, topo, net, WormholeSpec(partition_ports="data"), tmp_path, f"{lag}.sqlite")
        _conserved(r, dag, fn)
        assert r.counters["parked"] == (1 if lag == 0 else 0)
        err = np.abs(_fct(r, fn) - _fct(ref, fn)) / _fct(ref, fn)
        assert err.max() < 1e-3


@pytest.mark.parametrize("size", [140_000, 300_000])
def test_shadows_leave_no_stale_packets_behind(tmp_path, size):
    """Three rings of twelve short steps: each step's shadows are parked with packets in flight,
    finish with their leader, and their group is brought back. Those packets were all credited;
    drained afterwards, they loaded ports that the next step used at line rate, so they never
    left: queues grew by a packet or two a step (12.8 KB peak against 1.1 KB in packet mode) and
    the iteration ran 3.8 % long. They are dropped instead (ghosts)."""
    dag, fn, topo = _rings(3, 4, (size,) * 12)
    net = NetworkSpec(cc="hpcc")
    ref = run_packet(dag, topo, net)
    r = _run(dag, topo, net, WormholeSpec(partition_ports="data"), tmp_path)
    _conserved(r, dag, fn)
    assert r.counters["shadow_flows_mirrored"] >= 100
    assert r.peak_queue_bytes.max() <= ref.peak_queue_bytes.max() + 2 * 1100
    err = np.abs(_fct(r, fn) - _fct(ref, fn)) / _fct(ref, fn)
    it_ref, it = ref.node_finish_ps.max(), r.node_finish_ps.max()
    assert abs(it - it_ref) / it_ref < 0.015
    assert err.mean() < 0.015


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn"])
def test_parking_a_shadow_does_not_freeze_its_leaders_acks(tmp_path, cc):
    """0 -> 1 leads and 1 -> 0 follows it: each flow's ACKs leave through the other's data
    ports. Parked with those ports, the leader's ACKs in flight waited for the follower, which
    waits for the leader to finish: harmless while a later ACK covers them, a deadlock when
    they are the last (GPT-175B/1024 at 1 % message size ran on past 800 s simulated with four
    flows stuck). They are taken off the ports as these are parked and arrive on time."""
    dag, fn = flows_to_dag(flowset([(0, 1), (1, 0)], 2 * MB))
    topo = star(2)
    net = NetworkSpec(cc=cc)
    ref = run_packet(dag, topo, net)
    r = _run(dag, topo, net, WormholeSpec(partition_ports="data"), tmp_path)
    _conserved(r, dag, fn)
    assert r.counters["parked"] == 1
    assert r.counters["control_released"] > 0
    err = np.abs(_fct(r, fn) - _fct(ref, fn)) / _fct(ref, fn)
    # measured: HPCC 0.30 %, DCQCN 0.99 % (the follower's ACKs are a fluid load meanwhile)
    assert err.max() < 0.015
