"""Run the htsim Swift corpus (``tests/data/htsim``) through wormsim's Swift.

Each scenario is htsim's k = 4 fat-tree (16 hosts, 8 ToR, 8 aggregation, 4 core switches;
100 Gbit/s, 1 µs links) with flows starting at 0. wormsim runs it with the settings that make
the two models comparable (``tests/data/htsim/README.md``): no PFC, no ECN, serialisation to
the picosecond, Swift's hop scaling off (htsim's is inert), 1000 B payloads (1048 B on the wire,
htsim's packet). Each flow takes, per seed, the data and ACK paths htsim's run took
(``paths.csv``), pinned by replacing the ECMP route compiler for the run.

Node numbers: host h = h, ToR t = 16 + t, aggregation switch a = 24 + a, core c = 32 + c.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import polars as pl

from wormsim.netsim.common import flow_plan
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.sim_spec import SimSpec
from wormsim.netsim.simulate import simulate
from wormsim.netsim.wormhole.spec import WormholeSpec

__all__ = ["HTSIM", "SCENARIOS", "fat_tree", "scenario", "reference", "run", "network"]

HTSIM = Path(__file__).resolve().parents[1] / "data" / "htsim"
SCENARIOS = ("fattree4-incast8", "fattree4-incast15", "fattree4-perm")
"""The scenarios whose flows share one run; ``fattree4-alone`` runs each flow by itself."""
_TOR, _AGG, _CORE = 16, 24, 32


def fat_tree() -> Topology:
    """htsim's k = 4 ``FatTreeTopology``: host h on ToR h // 2; ToR t linked to aggregation
    switches 2 (t // 2) and 2 (t // 2) + 1; aggregation switch a to cores a % 2 and a % 2 + 2."""
    links = [(h, _TOR + h // 2) for h in range(16)]
    links += [(_TOR + t, _AGG + 2 * (t // 2) + i) for t in range(8) for i in (0, 1)]
    links += [(_AGG + a, _CORE + c) for a in range(8) for c in (a % 2, a % 2 + 2)]
    return Topology.from_links(
        36, list(range(16, 36)), [(a, b, 100e9, 1_000_000) for a, b in links]
    )


def network(**changes: Any) -> NetworkSpec:
    """Swift with the settings that match htsim's model."""
    return NetworkSpec(
        cc="swift",
        pfc_enabled=False,
        enable_qcn=False,
        ns3_truncate_tx_ns=False,
        swift_hop_scale_us=0.0,
        **changes,
    )


def scenario(name: str) -> dict:
    return json.loads((HTSIM / name / "scenario.json").read_text(encoding="utf-8"))


def reference(name: str) -> pl.DataFrame:
    """htsim's FCTs: ``seed, flow_id, fct_ns`` per flow and seed."""
    return pl.read_csv(HTSIM / name / "fct.csv").select("seed", "flow_id", "fct_ns")


_NODE = {"SRC": 0, "DST": 0, "LS": _TOR, "LS_": _TOR, "US": _AGG, "CS": _CORE}
_QUEUE = re.compile(r"([A-Z]+_?)(\d+)->([A-Z]+_?)(\d+)")


def _port_of(topo: Topology) -> dict[tuple[int, int], int]:
    return {
        (int(u), int(v)): p
        for p, (u, v) in enumerate(zip(topo.port_node, topo.port_peer, strict=True))
    }


def _route(queues: str, ports: dict[tuple[int, int], int]) -> list[int]:
    """Our egress ports of an htsim path (``SRC0->LS0(0) LS0->US1(0) ...``)."""
    out = []
    for a, i, b, j in _QUEUE.findall(queues):
        out.append(ports[(_NODE[a] + int(i), _NODE[b] + int(j))])
    return out


def pinned_routes(
    name: str, seed: int, topo: Topology, flow_ids: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """``(r_off, r_ports)`` of flows ``flow_ids`` in htsim's run ``seed``: data then ACK route
    of each flow."""
    paths = pl.read_csv(HTSIM / name / "paths.csv").filter(pl.col("seed") == seed)
    ports = _port_of(topo)
    off, flat = [0], []
    rows = {r["flow_id"]: r for r in paths.iter_rows(named=True)}
    for row in (rows[i] for i in flow_ids):
        for kind in ("data_queues", "ack_queues"):
            flat += _route(row[kind], ports)
            off.append(len(flat))
    return np.asarray(off, np.int64), np.asarray(flat, np.int64)


@contextmanager
def _pinned(on: Topology, r_off: np.ndarray, r_ports: np.ndarray) -> Iterator[None]:
    """Routes of every run on topology ``on`` are ``(r_off, r_ports)``."""
    real = flow_plan.flow_routes

    def routes(topo, src, dst, **kw):  # noqa: ANN001, ANN003, ANN202
        sport, off, ports = real(topo, src, dst, **kw)
        if topo is not on:  # another run (the kernels' warm-up)
            return sport, off, ports
        return sport, r_off, r_ports

    with mock.patch.object(flow_plan, "flow_routes", routes):
        yield


def run(
    name: str,
    seed: int | None,
    mode: str = "packet",
    net: NetworkSpec | None = None,
    flow_ids: list[int] | None = None,
    ecmp_seed: int = 0,
) -> np.ndarray:
    """wormsim's FCTs (ns) of flows ``flow_ids`` (default: all, by flow id) of scenario
    ``name``, run together on htsim's paths of run ``seed`` (``None``: wormsim's own ECMP
    hash, seeded with ``ecmp_seed``)."""
    sc = scenario(name)
    topo = fat_tree()
    ids = flow_ids if flow_ids is not None else [f["flow_id"] for f in sc["flows"]]
    fl = [next(f for f in sc["flows"] if f["flow_id"] == i) for i in ids]
    n = len(fl)
    flows = FlowSet(
        src=np.array([f["src"] for f in fl], np.int32),
        dst=np.array([f["dst"] for f in fl], np.int32),
        pg=np.full(n, 3, np.int32),
        dport=np.full(n, 100, np.int32),
        size_bytes=np.array([f["wormsim_size_bytes"] for f in fl], np.int64),
        start_ps=np.array([f["start_ns"] * 1000 for f in fl], np.int64),
    )
    dag, flow_node = flows_to_dag(flows)
    sim = SimSpec(mode=mode, routing="hash", seed=ecmp_seed, wormhole=WormholeSpec(memo_mode="off"))
    if seed is None:
        res = simulate(dag, topo, net or network(), sim)
    else:
        with _pinned(topo, *pinned_routes(name, seed, topo, ids)):
            res = simulate(dag, topo, net or network(), sim)
    return (res.node_finish_ps[flow_node] - flows.start_ps) / 1e3
