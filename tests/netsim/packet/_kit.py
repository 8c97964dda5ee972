"""Shared set-up of the kernel unit tests: a small real state built the way the engine builds it
(``packet_sim.build_state``), QPs put in their started state, packets taken from the pool, and
ports looked up by their ends.

The kernel functions take ``State`` and the raw pointer view of ``Params``
(:func:`~wormsim.netsim.packet.state.raw_params`); each test module calls them through small
``njit`` wrappers that convert ``P`` first, as ``engine.run_kernel`` does. The wrappers are *not*
cached (``cache=True``): numba would keep the kernel code compiled into a wrapper's cache entry,
which only the test file's own changes invalidate (``wormsim.kernel_cache`` drops the package's
caches, not the tests'), so after an edit of the kernel the tests would keep checking the old
code. Uncached, a wrapper costs a fraction of a second per process; the kernels it calls still
load from the package's cache.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from tests.netsim.conftest import dag_of, star
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.core import pkt_alloc
from wormsim.netsim.packet.run import build_state
from wormsim.netsim.wormhole.spec import WormholeSpec

__all__ = ["Kit", "kit", "port_of", "alloc", "heap_events", "US", "NS"]

US = 1_000_000  # ps
NS = 1_000  # ps


class Kit:
    """A built, not yet started, engine state: ``A`` (the arrays), ``S`` (the kernels' view of
    them), ``P`` (the parameters), ``topo`` and ``net``."""

    def __init__(self, A: dict[str, np.ndarray], P: st.Params, topo: Topology, net: NetworkSpec):
        self.A = A
        self.S = st.make_state(A, wormhole=isinstance(P, st.WhParams))
        self.P = P
        self.topo = topo
        self.net = net

    def start(self, q: int, now: int = 0) -> None:
        """Put QP ``q`` in the state ``dag_exec._start_qp`` leaves it in (rates at its NIC's line
        rate, window ``P.win``), without sending anything."""
        A = self.A
        rate = float(A["p_rate_bps"][A["qp_nic"][q]])
        A["qp_start_ps"][q] = now
        for f in ("qp_rate_bps", "qp_max_bps", "m_target_bps", "h_cur_bps", "t_cur_bps"):
            A[f][q] = rate
        A["qp_win"][q] = self.P.win
        A["qp_next_avail_ps"][q] = now

    def nic_add(self, q: int) -> None:
        """Append QP ``q`` to its NIC's round-robin list (as ``_start_qp`` does)."""
        A = self.A
        port = A["qp_nic"][q]
        A["nic_qps"][A["nic_off"][port] + A["nic_n"][port]] = q
        A["nic_n"][port] += 1

    def params(self, **changes: Any) -> st.Params:
        """``P`` with some fields changed (same types, so no new compilation)."""
        for k, v in changes.items():
            assert type(v) is type(getattr(self.P, k)), f"{k}: keep the type of the field"
        return self.P._replace(**changes)


def kit(
    cc: str = "hpcc",
    pairs: list[tuple[int, int]] | None = None,
    n_hosts: int = 2,
    size: int = 1_000_000,
    topo: Topology | None = None,
    wormhole: WormholeSpec | None = None,
    **net: Any,
) -> Kit:
    """A state of flows ``pairs`` (default ``0 -> 1``) of ``size`` bytes on ``star(n_hosts)``
    (hosts ``0..n-1`` on switch ``n``, 100 Gbit/s, 1 µs links) or ``topo``, congestion control
    ``cc`` and the other :class:`NetworkSpec` fields ``net``; with ``wormhole``, Wormhole's arrays
    too (they are empty in packet mode)."""
    pairs = pairs or [(0, 1)]
    topo = topo or star(n_hosts)
    dag, _ = dag_of(pairs, size)
    spec = NetworkSpec(cc=cc, **net)
    A, P, _, _ = build_state(dag, topo, spec, routing="ns3", wormhole=wormhole)
    return Kit(A, P, topo, spec)


def port_of(topo: Topology, a: int, b: int) -> int:
    """The directed port from node ``a`` to node ``b``."""
    hit = np.flatnonzero((topo.port_node == a) & (topo.port_peer == b))
    assert hit.size == 1
    return int(hit[0])


@njit
def _alloc(S_):
    S = S_
    return pkt_alloc(S)


def alloc(k: Kit, **fields: Any) -> int:
    """Take a packet from the pool (``core.pkt_alloc``) and set its ``pk_*`` fields, e.g.
    ``alloc(k, type=PK_DATA, size=1090)``; INT arrays take a sequence."""
    p = int(_alloc(k.S))
    for name, value in fields.items():
        arr = k.A["pk_" + name]
        arr[p] = value
    return p


def heap_events(A: dict[str, np.ndarray]) -> list[tuple[int, int, int, int]]:
    """The pending events as ``(time, type, arg, owner)``, in heap-array order."""
    n = int(A["cnt"][st.C_HEAPN])
    return [
        (int(A["ht_ps"][i]), int(A["he"][i]) & 0xFF, int(A["he"][i]) >> 8, int(A["ho"][i]))
        for i in range(n)
    ]
