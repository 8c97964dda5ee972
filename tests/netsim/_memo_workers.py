"""Wormhole runs in child processes for the memo-isolation tests (importable under ``spawn``)."""

from __future__ import annotations

from typing import Any

from wormsim.memo import MemoStore
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

__all__ = ["scenario_run", "run_on_shared_store"]


def scenario_run(store: MemoStore | None, wormhole: WormholeSpec | None = None):
    """The two-incast scenario of ``test_memo_bridge`` (one pattern, twice) with Wormhole."""
    from tests.netsim.test_memo_bridge import WH, _two_incasts

    dag, _, topo = _two_incasts(fan_in=2)
    return run_packet(dag, topo, NetworkSpec(cc="hpcc"), wormhole=wormhole or WH, memo_store=store)


class _PausingStore(MemoStore):
    """A store that, right after a run read its snapshot, waits at ``barrier`` and then for
    ``go``: the test decides what the store holds while the run goes on."""

    def __init__(self, path: str, barrier: Any, go: Any) -> None:
        super().__init__(path, timeout_s=60)
        self._barrier, self._go = barrier, go

    def namespace_rows(self, namespace: str) -> list[tuple[Any, ...]]:
        rows = super().namespace_rows(namespace)
        self._barrier.wait(timeout=120)
        if not self._go.wait(timeout=120):
            raise TimeoutError("never told to go on")
        return rows


def run_on_shared_store(path: str, leader: bool, barrier: Any, done: Any, results: Any) -> None:
    """Run the scenario on the shared store ``path``. Every worker reads its snapshot, then all
    meet; the leader runs on, the others wait until the leader has finished (and stored its
    entries), so their runs overlap each other and start looking up after the leader's inserts.
    """
    try:
        go = _Set() if leader else done
        result = scenario_run(_PausingStore(path, barrier, go))
        if leader:
            done.set()
        results.put((leader, result.node_finish_ps, result.counters, result.memo, None))
    except Exception as exc:  # reported to the parent, which fails the test
        done.set()
        results.put((leader, None, None, None, repr(exc)))


class _Set:
    """An event that is already set."""

    def wait(self, timeout: float | None = None) -> bool:
        return True
