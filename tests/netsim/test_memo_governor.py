"""The memo bridge's governor: lookups that do not pay are paused, and a pause changes no
physics (a paused partition is simulated and fast-forwarded exactly as with memoization off)."""

from __future__ import annotations

import numpy as np

from wormsim.memo import MemoStore
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole import bridge as memo_bridge
from wormsim.netsim.wormhole.governor import MemoGovernor
from wormsim.netsim.wormhole.spec import WormholeSpec

from .conftest import dag_of, star


def _lookups(g: MemoGovernor, n: int, saved: float) -> list[int]:
    return [g.observe(saved) for _ in range(n)]


def test_lookups_that_pay_are_never_paused():
    g = MemoGovernor(window=8, min_yield_packets=10, learn_windows=1)
    assert not any(_lookups(g, 100, 10.0))
    assert g.pauses == 0 and g.lookups == 100 and g.saved_packets == 1000


def test_a_cold_store_learns_before_the_first_pause():
    g = MemoGovernor(window=8, min_yield_packets=10, learn_windows=3, first_pause=5)
    pauses = _lookups(g, 24, 0.0)
    assert not any(pauses[:23]) and pauses[23] == 5  # at the end of the third window


def test_pauses_double_while_windows_fail_and_reset_when_one_pays():
    g = MemoGovernor(window=4, min_yield_packets=10, learn_windows=0, first_pause=3, max_pause=10)
    decided = [p for p in _lookups(g, 16, 0.0) if p]
    assert decided == [3, 6, 10, 10]  # doubling, bounded by max_pause
    # a window that pays does not pause, but the run as a whole has not paid: the next failing
    # window pauses again, from the first length
    assert not any(_lookups(g, 4, 50.0))
    assert [p for p in _lookups(g, 4, 0.0) if p] == [3]
    assert g.pauses == 5 and g.paused_partitions == 3 + 6 + 10 + 10 + 3


def test_a_run_whose_memo_paid_overall_is_not_paused():
    g = MemoGovernor(window=4, min_yield_packets=10, learn_windows=0)
    _lookups(g, 4, 1000.0)  # one window saved plenty
    assert not any(_lookups(g, 12, 0.0))  # overall yield still above the bar


def test_a_paused_run_is_the_memo_off_run(tmp_path, monkeypatch):
    """Pause every lookup after the first: the partitions are simulated and fast-forwarded as
    with memoization off, so every node finishes at the same picosecond."""
    topo = star(9)
    dag, fn = dag_of([(i, 8) for i in range(8)], 2_000_000)
    net = NetworkSpec(cc="hpcc")
    spec = WormholeSpec(share_transients=False)
    off = run_packet(dag, topo, net, wormhole=WormholeSpec(memo_mode="off"))

    def strict() -> MemoGovernor:
        return MemoGovernor(window=1, min_yield_packets=1e18, learn_windows=0, first_pause=10**9)

    monkeypatch.setattr(memo_bridge, "MemoGovernor", strict)
    with MemoStore(tmp_path / "m.sqlite") as store:
        r = run_packet(dag, topo, net, wormhole=spec, memo_store=store)
    c = r.counters
    assert c["partitions_formed"] > 1 and c["memo_misses"] == 1 and c["memo_hits"] == 0
    assert c["memo_pauses"] == 1
    assert c["memo_paused_partitions"] == c["partitions_formed"] - 1
    np.testing.assert_array_equal(r.node_finish_ps, off.node_finish_ps)
    assert r.wormhole_plan["memo_governor"]["window_lookups"] == 1
    qp = r.flow_qp[fn]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], 2_000_000)


def test_the_defaults_are_recorded(tmp_path):
    topo = star(3)
    dag, _ = dag_of([(0, 2), (1, 2)], 1_000_000)
    with MemoStore(tmp_path / "m.sqlite") as store:
        r = run_packet(dag, topo, NetworkSpec(), wormhole=WormholeSpec(), memo_store=store)
    assert r.wormhole_plan["memo_governor"] == MemoGovernor().settings()
    assert r.counters["memo_pauses"] == 0


def test_a_park_is_credited_what_its_shadow_mirrored(tmp_path, monkeypatch):
    """Two lone 20 MB flows into two receivers form one pattern at one tick: the second is
    parked behind the first. A 5 MB flow joins the second's receiver 60 us in and brings the
    shadow back. The governor is credited what the shadow mirrored until then (the kernel's
    ``bytes_shadowed``), not the 20 MB it had left when it was parked: a park that breaks away
    early saved little, and counting it as paid kept a run whose lookups do not pay from
    ever pausing them."""
    seen: list[float] = []  # what the governor was credited per lookup
    direct: list[float] = []  # of which the lookup's own saving (a hit's replayed bytes)

    class Recording(MemoGovernor):
        def observe(self, saved_packets: float = 0.0) -> int:
            seen.append(saved_packets)
            return super().observe(saved_packets)

    govern = memo_bridge.MemoBridge._govern

    def recording_govern(self, A, P, saved_bytes):
        direct.append(saved_bytes / P.mtu)
        return govern(self, A, P, saved_bytes)

    monkeypatch.setattr(memo_bridge, "MemoGovernor", Recording)
    monkeypatch.setattr(memo_bridge.MemoBridge, "_govern", recording_govern)
    src, dst, start = [0, 2, 3], [1, 4, 4], [0, 0, 60_000_000]
    size = [20_000_000, 20_000_000, 5_000_000]
    fl = FlowSet(
        src=np.array(src, np.int32), dst=np.array(dst, np.int32), pg=np.full(3, 3, np.int32),
        dport=np.full(3, 100, np.int32), size_bytes=np.array(size, np.int64),
        start_ps=np.array(start, np.int64),
    )  # fmt: skip
    dag, fn = flows_to_dag(fl)
    spec = WormholeSpec(partition_ports="data")
    with MemoStore(tmp_path / "m.sqlite") as store:
        r = run_packet(dag, star(5), NetworkSpec(cc="dctcp"), wormhole=spec, memo_store=store)
    c = r.counters
    assert c["parked"] == 1 and c["parked_released"] == 1
    mirrored = c["bytes_shadowed"]
    # the shadow ran 60 us at about its leader's line rate: some hundreds of KB, not 20 MB
    assert 100_000 < mirrored < 2_000_000
    assert mirrored <= c["bytes_skipped"]
    # the credit for parking is what the shadow mirrored, counted at the lookups after it
    parking = sum(seen) - sum(direct)
    assert 0 < parking <= mirrored / 1000 + 1e-9
    assert parking > 0.5 * mirrored / 1000
    qp = r.flow_qp[fn]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], size)
