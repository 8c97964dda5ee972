"""Swift's physics on whole runs: N flows share a bottleneck fairly and fill it, the bottleneck's
queue holds the delay Swift targets, an incast converges without loss, and the packet, flow and
Wormhole engines all run it."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from tests.netsim.conftest import US, dag_of, star
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import Monitors, run_packet
from wormsim.netsim.sim_spec import SimSpec
from wormsim.netsim.simulate import simulate
from wormsim.netsim.wormhole.spec import WormholeSpec

LINE = 100e9
WIRE = 1048  # bytes of a 1000 B packet on the wire
RTT0_NS = 4 * 1000 + 2 * (WIRE + 60) * 8 / LINE * 1e9  # 2 links each way, 1 µs each


def _bottleneck(n: int) -> int:
    """The port from the star's switch (node n + 1) down to host n: senders 0..n-1 share it."""
    return 2 * n + 1


@pytest.mark.parametrize("n", [2, 4, 8])
def test_n_flows_share_a_bottleneck_fairly_and_fill_it(n):
    """Equal flows started together finish together (equal shares over the run), and the last
    one close to when the bottleneck could have carried all their bytes."""
    size = 10_000_000
    dag, fn = dag_of([(i, n) for i in range(n)], size)
    res = run_packet(dag, star(n + 1), NetworkSpec(cc="swift"))
    fin = res.node_finish_ps[fn].astype(float)
    assert (fin > 0).all() and res.counters["drops"] == 0
    assert (fin.max() - fin.min()) / fin.max() < 0.03
    all_bytes_ps = n * size / 1000 * WIRE * 8 / LINE * 1e12
    assert fin.max() / all_bytes_ps < 1.03


def test_the_bottleneck_queue_holds_the_target_delay():
    """Four flows into one host: in steady state their RTT sits at Swift's target (base 20 µs +
    one switch × 20/6.55 µs + flow scaling), so the bottleneck's queue holds the target less the
    base RTT. The flows' windows w satisfy 4 w packets = line rate × target; solved for w."""
    n = 4
    dag, fn = dag_of([(i, n) for i in range(n)], 20_000_000)
    res = run_packet(
        dag,
        star(n + 1),
        NetworkSpec(cc="swift"),
        monitors=Monitors(period_ps=US, queue_ports=(_bottleneck(n),)),
    )
    q = res.queue_samples
    t_end = res.node_finish_ps[fn].min()
    mid = q.filter((q["time_ps"] > t_end * 0.4) & (q["time_ps"] < t_end * 0.95))["bytes"]
    queue_ns = mid.to_numpy().mean() * 8 / LINE * 1e9

    alpha = 100_000 / (1 / math.sqrt(0.1) - 1 / math.sqrt(100))
    target = 20_000 + 20_000 / 6.55
    for _ in range(20):  # fixed point of w = line × target / (n × packet), target(w)
        w = LINE * target * 1e-9 / (n * WIRE * 8)
        fs = min(max(alpha / math.sqrt(w) - alpha / math.sqrt(100), 0.0), 100_000)
        target = 20_000 + 20_000 / 6.55 + fs
    expected_ns = target - RTT0_NS
    assert queue_ns == pytest.approx(expected_ns, rel=0.05)  # hop scaling off: 13 % lower


@pytest.mark.parametrize("pfc", [True, False])
def test_an_incast_converges_without_loss(pfc):
    """Fifteen senders into one host: every flow finishes, none far behind the others, the link
    is kept full, and with PFC off nothing is dropped (the queue Swift holds fits the buffer)."""
    n = 15
    size = 2_000_000
    dag, fn = dag_of([(i, n) for i in range(n)], size)
    res = run_packet(dag, star(n + 1), NetworkSpec(cc="swift", pfc_enabled=pfc))
    fin = res.node_finish_ps[fn].astype(float)
    c = res.counters
    assert (fin > 0).all() and c["drops"] == 0
    assert fin.min() / fin.max() > 0.9
    all_bytes_ps = n * size / 1000 * WIRE * 8 / LINE * 1e12
    assert fin.max() / all_bytes_ps < 1.05
    assert res.peak_queue_bytes.max() < 32 * 1024 * 1024


def test_swift_runs_in_packet_flow_and_wormhole_modes():
    """Ring-like traffic of long flows: every mode finishes every flow; Wormhole's finish times
    within 1 % of packet mode's, the fluid engine's within its usual 10 %."""
    n = 8
    pairs = [(i, (i + 1) % n) for i in range(n)] + [(i, (i + 3) % n) for i in range(n)]
    dag, fn = dag_of(pairs, 4_000_000)
    topo = star(n)
    net = NetworkSpec(cc="swift")
    out = {}
    for mode in ("packet", "wormhole", "flow"):
        sim = SimSpec(mode=mode, wormhole=WormholeSpec(memo_mode="off"))
        out[mode] = simulate(dag, topo, net, sim).node_finish_ps[fn].astype(float)
        assert (out[mode] > 0).all(), mode
    assert np.abs(out["wormhole"] / out["packet"] - 1).max() < 0.01
    assert np.abs(out["flow"].max() / out["packet"].max() - 1) < 0.1


def test_the_rate_monitor_shows_each_flows_window_per_rtt_at_its_fair_share():
    """Swift has no rate variable: the monitor samples its window per smoothed RTT, which late
    in the run is 1/N of the bottleneck for each of N flows and sums to about the line rate."""
    n = 4
    dag, fn = dag_of([(i, n) for i in range(n)], 20_000_000)
    res = run_packet(
        dag, star(n + 1), NetworkSpec(cc="swift"), monitors=Monitors(period_ps=10 * US)
    )
    rs = res.rate_samples
    t_end = res.node_finish_ps[fn].min()
    mid = rs.filter((rs["time_ps"] > t_end * 0.5) & (rs["time_ps"] < t_end * 0.95))
    rates = mid.group_by("qp").agg(pl.col("rate_bps").mean()).sort("qp")["rate_bps"].to_numpy()
    assert np.abs(rates / rates.sum() - 1 / n).max() < 0.02
    assert rates.sum() == pytest.approx(LINE, rel=0.05)
