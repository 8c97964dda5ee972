"""Kernel calls of bounded work: results do not depend on where a run is split into calls."""

from __future__ import annotations

import numpy as np
import pytest

from wormsim.memo import MemoStore
from wormsim.netsim.common.budget import CallBudget
from wormsim.netsim.flow.run import run_flow
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

from .conftest import dag_of, star


def _tiny() -> CallBudget:
    """A budget that stops every few events (thousands of calls on these DAGs)."""
    return CallBudget(first=7, lo=7, hi=7)


def _same(a, b) -> None:
    assert a.counters["events_processed"] == b.counters["events_processed"]
    np.testing.assert_array_equal(a.node_start_ps, b.node_start_ps)
    np.testing.assert_array_equal(a.node_finish_ps, b.node_finish_ps)


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn"])
def test_packet_runs_split_into_calls_are_bit_identical(cc):
    dag, _ = dag_of([(0, 4), (1, 4), (2, 4), (3, 4)], 400_000)
    calls: list[int] = []
    whole = run_packet(dag, star(5), NetworkSpec(cc=cc), budget=CallBudget(first=1 << 40))
    split = run_packet(
        dag, star(5), NetworkSpec(cc=cc), budget=_tiny(), progress=lambda t, n, e: calls.append(e)
    )
    _same(whole, split)
    assert len(calls) > 100  # the run really was cut into many calls
    assert calls == sorted(calls) and calls[-1] == split.counters["events_processed"]


def test_wormhole_runs_split_into_calls_are_bit_identical(tmp_path):
    dag, _ = dag_of([(0, 4), (1, 4), (2, 4), (3, 4)], 20_000_000)
    net, wh = NetworkSpec(cc="hpcc"), WormholeSpec()
    whole = run_packet(dag, star(5), net, wormhole=wh, memo_store=MemoStore(tmp_path / "a"))
    split = run_packet(
        dag, star(5), net, wormhole=wh, memo_store=MemoStore(tmp_path / "b"), budget=_tiny()
    )
    _same(whole, split)
    assert split.counters["skips"] > 0
    np.testing.assert_array_equal(whole.qp_credit_bytes, split.qp_credit_bytes)


def test_flow_runs_split_into_calls_are_bit_identical():
    dag, _ = dag_of([(0, 4), (1, 4), (2, 4), (3, 4), (4, 0)], 4_000_000, start_ps=0)
    whole = run_flow(dag, star(5), NetworkSpec(), budget=CallBudget(first=1 << 40))
    split = run_flow(dag, star(5), NetworkSpec(), budget=CallBudget(first=1, lo=1, hi=1))
    _same(whole, split)


def test_budget_follows_the_measured_rate():
    b = CallBudget(target_s=0.1, first=1_000, lo=10, hi=10**9)
    b.stop(0)
    b._t -= 0.01  # 1,000 events in 10 ms: 100 k events/s, so 10 k per 0.1 s (at most 4x at once)
    b.observe(1_000)
    assert b.size == 4_000
    b.stop(1_000)
    b._t -= 1.0  # 4,000 events in 1 s: too slow, shrink to 400
    b.observe(5_000)
    assert 300 <= b.size <= 400


def test_ctrl_c_interrupts_a_run_without_any_progress_display():
    """As a notebook's "interrupt kernel" does: SIGINT to the process from outside while the
    kernel runs, no progress callback given, raises KeyboardInterrupt within a second. (The
    signal comes from another process, as Jupyter's does: a Python timer thread would need the
    GIL, which a jitted kernel call holds, so on a loaded machine it may fire late.) Python's
    own SIGINT handler is put in place for the test: a test run started as a background job of
    a non-interactive shell inherits SIGINT ignored, and Python then installs none."""
    import os
    import signal
    import subprocess
    import time

    dag, _ = dag_of([(i, 8) for i in range(8)], 2_000_000_000)  # seconds of packet simulation
    run_packet(*dag_of([(0, 1)], 1000)[:1], star(2), NetworkSpec(cc="hpcc"))  # compiled
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.5; kill -INT {os.getpid()}; date +%s.%N"],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        with pytest.raises(KeyboardInterrupt):
            run_packet(dag, star(9), NetworkSpec(cc="hpcc"))
        caught = time.time()
        sent = float(killer.communicate(timeout=10)[0].strip())
        assert caught - sent < 1.0
    finally:
        killer.kill()
        signal.signal(signal.SIGINT, before)
