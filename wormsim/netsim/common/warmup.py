"""A tiny scenario that engines run once per process to compile (or load) their kernels, so that
compile time is measured apart from run time."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from wormsim.collective.dag import KIND_DELAY, KIND_FLOW, DagArrays
from wormsim.netsim.fabric.topology import Topology

__all__ = ["FIRST_COMPILE", "tiny_scenario", "kernels_cached", "compile_notice"]


def tiny_scenario() -> tuple[DagArrays, Topology]:
    """Two hosts on one switch (100 Gbps, 1 µs links) and one 3000 B flow after a 10 ps delay."""
    topo = Topology.from_links(3, [2], [(0, 2, 100e9, 1_000_000), (1, 2, 100e9, 1_000_000)])
    dag = DagArrays(
        kind=np.array([KIND_DELAY, KIND_FLOW], np.int8),
        src=np.array([-1, 0], np.int32),
        dst=np.array([-1, 1], np.int32),
        rank=np.array([-1, -1], np.int32),
        size_bytes=np.array([0, 3000], np.int64),
        duration_ps=np.array([10, 0], np.int64),
        dep_count=np.array([0, 1], np.int32),
        child_offsets=np.array([0, 1, 1], np.int64),
        child_index=np.array([1], np.int64),
    )
    return dag, topo


_KERNEL_CACHE = {
    "packet": ("packet", "engine.run_kernel-*.nbi"),
    "wormhole": ("packet", "engine.run_kernel-*.nbi"),
    "flow": ("flow", "kernel.kernel-*.nbi"),
}


FIRST_COMPILE = {"packet": "about half a minute", "wormhole": "about a minute and a half"}
"""How long a mode's first compile takes on one core (``bench/results/compile_time.md``)."""


def kernels_cached(mode: str) -> bool:
    """Whether the numba cache already holds the engine kernel ``mode`` runs on.

    Looks for the kernel's cache index beside its module (numba's default) or under
    ``NUMBA_CACHE_DIR``. A miss means the next run compiles first (:data:`FIRST_COMPILE`).
    """
    sub, pattern = _KERNEL_CACHE.get(mode, _KERNEL_CACHE["packet"])
    here = Path(__file__).parents[1] / sub / "__pycache__"
    if any(here.glob(pattern)):
        return True
    custom = os.environ.get("NUMBA_CACHE_DIR")
    return bool(custom) and next(Path(custom).rglob(pattern), None) is not None


def compile_notice(mode: str) -> str | None:
    """A one-line notice to show before a run whose kernels must compile first, else None."""
    if kernels_cached(mode):
        return None
    took = FIRST_COMPILE.get(mode, "about a minute")
    return f"compiling the {mode}-mode kernels (first run only, {took}; cached afterwards)"
