"""Shared helpers for the netsim tests."""

from __future__ import annotations

import numpy as np

from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag

US = 1_000_000  # ps


def star(n_hosts: int, rate: float = 100e9, delay_ps: int = US) -> Topology:
    """Hosts 0..n-1 on one switch (node n)."""
    return Topology.from_links(
        n_hosts + 1, [n_hosts], [(i, n_hosts, rate, delay_ps) for i in range(n_hosts)]
    )


def flowset(pairs, size, start_ps=0) -> FlowSet:
    """Flows ``(src, dst)`` of ``size`` bytes, all at ``start_ps``."""
    n = len(pairs)
    return FlowSet(
        src=np.array([a for a, _ in pairs], np.int32),
        dst=np.array([b for _, b in pairs], np.int32),
        pg=np.full(n, 3, np.int32),
        dport=np.full(n, 100, np.int32),
        size_bytes=np.full(n, size, np.int64),
        start_ps=np.full(n, start_ps, np.int64),
    )


def dag_of(pairs, size, start_ps=0):
    """DAG and flow nodes of :func:`flowset`."""
    return flows_to_dag(flowset(pairs, size, start_ps))
