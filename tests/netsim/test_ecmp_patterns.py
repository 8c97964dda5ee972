"""Wormhole on ECMP fabrics: rings whose flows collide on a spine uplink, and one contention
pattern under two ECMP placements.

Two all-reduce rings, A over hosts 0, 2, 4, 6 and B over 1, 3, 5, 7, on a leaf-spine Clos of
four leaves (two hosts each) and two spines: every ring hop crosses leaves, and ECMP hashes each
connection onto one spine. Where ring A's and ring B's flows out of one leaf land on the same
spine they share its uplink (50 Gbit/s each instead of 100): the two rings are coupled, as the
data-parallel rings of two pipeline stages are on a rail fabric's leaf uplinks.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wormsim.collective.dag import KIND_FLOW, dag_to_arrays
from wormsim.experiment.config import ClusterSpec
from wormsim.memo import MemoStore
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.fabric.routing import flow_routes
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

RINGS = {"A": (0, 2, 4, 6), "B": (1, 3, 5, 7)}
STEPS = 6  # a ring all-reduce over 4 ranks: 2 (n - 1) steps
SIZE = 4_000_000  # bytes per ring step


def _rings() -> pl.DataFrame:
    """The DAG of both rings: rank i sends step k once it has received step k - 1 and sent
    its own step k - 1 (one connection sends its steps in order, as an NCCL channel does)."""
    rows: list[tuple] = []  # node_id, src, dst, deps, group, step
    for group, hosts in RINGS.items():
        n = len(hosts)
        first = len(rows)
        for k in range(STEPS):
            for i in range(n):
                deps = [] if k == 0 else [first + (k - 1) * n + j for j in ((i - 1) % n, i)]
                rows.append((len(rows), hosts[i], hosts[(i + 1) % n], deps, group, k))
    m = len(rows)
    return pl.DataFrame(
        {
            "node_id": [r[0] for r in rows],
            "kind": ["flow"] * m,
            "src": [r[1] for r in rows],
            "dst": [r[2] for r in rows],
            "rank": [-1] * m,
            "size_bytes": [SIZE] * m,
            "duration_ps": [0] * m,
            "deps": [r[3] for r in rows],
            "group": [r[4] for r in rows],
            "channel": [0] * m,
            "step": [r[5] for r in rows],
        },
        schema_overrides={"src": pl.Int32, "dst": pl.Int32, "rank": pl.Int32},
    )


DAG = dag_to_arrays(_rings())
TOPO = build_topology(
    ClusterSpec(gpus=8, gpus_per_node=1, topology="clos", hosts_per_leaf=2, fabric_link_gbps=100)
)
FLOWS = np.flatnonzero(DAG.kind == KIND_FLOW)


def _uplinks(seed: int) -> dict[int, frozenset[str]]:
    """Leaf-to-spine port -> the rings whose flows use it, with ECMP seed ``seed``."""
    _, off, ports = flow_routes(
        TOPO, DAG.src[FLOWS], DAG.dst[FLOWS], seed=seed, connection=DAG.connection[FLOWS]
    )
    groups = _rings()["group"].to_list()
    use: dict[int, set[str]] = {}
    for f in range(FLOWS.size):
        port = int(ports[off[2 * f] + 1])  # hop 2 of host -> leaf -> spine -> leaf -> host
        use.setdefault(port, set()).add(groups[f])
    return {p: frozenset(g) for p, g in use.items()}


def _collisions(seed: int) -> frozenset[int]:
    """The uplinks both rings share under ECMP seed ``seed``."""
    return frozenset(p for p, g in _uplinks(seed).items() if len(g) == 2)


def _seeds() -> tuple[int, int]:
    """Two ECMP seeds whose rings collide on the same number of uplinks, but on different
    ones: one contention pattern under two placements."""
    by_count: dict[int, int] = {}
    for seed in range(64):
        c = _collisions(seed)
        if not c:
            continue
        if len(c) in by_count and _collisions(by_count[len(c)]) != c:
            return by_count[len(c)], seed
        by_count.setdefault(len(c), seed)
    raise AssertionError("no two ECMP seeds collide the rings differently")


SEED_A, SEED_B = _seeds()
NET = NetworkSpec(cc="hpcc")


def _fct(r) -> np.ndarray:
    return (r.node_finish_ps - r.node_start_ps)[FLOWS].astype(np.float64)


def _mean_err(r, ref) -> float:
    """Mean per-flow FCT difference of run ``r`` from run ``ref``."""
    return float(np.mean(np.abs(_fct(r) - _fct(ref)) / _fct(ref)))


def _agrees(r, ref, floor: float) -> None:
    """Every flow finished, delivering exactly its bytes, with packet mode's FCTs: mean error
    within packet mode's own noise floor (``floor``), the iteration (last finish) under 0.5 %."""
    assert (r.node_finish_ps[FLOWS] > 0).all()
    qp = r.flow_qp[FLOWS]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], SIZE)
    assert _mean_err(r, ref) <= floor
    end, end0 = r.node_finish_ps.max(), ref.node_finish_ps.max()
    assert abs(end - end0) / end0 < 0.005


def _delayed(flow: int, delay_ps: int = 1000):
    """The rings' DAG with a compute node of ``delay_ps`` before step-0 flow ``flow``; every
    flow keeps its connection, so its ECMP path."""
    df = _rings()
    n = df.height
    row = {c: [df[c][0]] for c in df.columns}
    row.update(node_id=[n], kind=["compute"], src=[-1], dst=[-1], rank=[int(df["src"][flow])],
               size_bytes=[0], duration_ps=[delay_ps], deps=[[]], group=["delay"])  # fmt: skip
    deps = df["deps"].to_list()
    deps[flow] = [*deps[flow], n]
    df = df.with_columns(pl.Series("deps", deps, dtype=df.schema["deps"]))
    dag = dag_to_arrays(pl.concat([df, pl.DataFrame(row, schema=df.schema)]))
    dag.connection[FLOWS] = DAG.connection[FLOWS]
    return dag


@pytest.fixture(scope="module")
def packet_runs():
    return {s: run_packet(DAG, TOPO, NET, seed=s) for s in (SEED_A, SEED_B)}


@pytest.fixture(scope="module")
def packet_floor(packet_runs) -> float:
    """Packet mode against itself: the largest mean per-flow FCT difference from the reference
    of the packet runs that start one of ring A's first flows 1 ns late."""
    ref = packet_runs[SEED_A]
    return max(_mean_err(run_packet(_delayed(f), TOPO, NET, seed=SEED_A), ref) for f in range(4))


def test_collided_rings_share_their_uplinks_in_packet_mode(packet_runs):
    """The scenario's premise: where the rings collide a ring step takes about twice as long
    (two flows on one 100 Gbit/s uplink) as where they do not."""
    assert _collisions(SEED_A) and len(_collisions(SEED_A)) < len(RINGS["A"])
    fct = _fct(packet_runs[SEED_A])
    alone = SIZE * 8 / 100e9 * 1e12  # ps at line rate
    assert fct.max() > 1.7 * alone  # a collided flow runs at about half the line rate
    assert fct.min() < 1.3 * alone  # a flow on an uplink of its own: near the line rate


def test_packet_mode_moves_by_itself_when_one_flow_starts_1ns_late(packet_runs, packet_floor):
    """How two flows split a collided uplink depends on how packets interleave there, so one
    flow starting 1 ns late moves the others' FCTs by about a percent (measured 2026-12-04:
    0.91-1.94 % mean over the four first flows of ring A, up to 8.3 % on one flow), while the
    iteration stays within 0.2 %. That is the bound Wormhole's per-flow FCTs are held to."""
    assert 0.005 < packet_floor < 0.05
    ref = packet_runs[SEED_A]
    late = run_packet(_delayed(0), TOPO, NET, seed=SEED_A)
    assert (
        abs(late.node_finish_ps.max() - ref.node_finish_ps.max()) < 0.005 * ref.node_finish_ps.max()
    )


@pytest.mark.xfail(
    strict=True,
    reason="measured 2026-12-07: mean FCT 4.42 % off packet mode, iteration +1.25 % (memo off: "
    "1.86 % and +0.02 %), packet mode's own floor 2.44 %. Memo hits replay rates from another "
    "context (a flow into a host that is itself sending is window-bound), and skips leave "
    "HPCC's INT byte counters out of step across a flow's hops (docs/journal/wormhole.md, "
    "2026-12-07, tenth session)",
)
def test_an_ecmp_collided_pair_of_rings_skips_and_finishes_as_in_packet_mode(
    packet_runs, packet_floor, tmp_path
):
    ref = packet_runs[SEED_A]
    with MemoStore(tmp_path / "m.sqlite") as store:
        r = run_packet(DAG, TOPO, NET, seed=SEED_A, wormhole=WormholeSpec(), memo_store=store)
    c = r.counters
    assert c["skips"] > 0
    assert c["bytes_skipped"] > 0.3 * SIZE * FLOWS.size
    assert c["events_processed"] < 0.7 * ref.counters["events_processed"]
    _agrees(r, ref, packet_floor)


def test_an_isomorphic_pattern_under_a_different_ecmp_placement_hits(packet_runs, tmp_path):
    """The rings under ECMP seed A teach the store; under seed B the collisions sit on other
    uplinks (other ports, other spines), the same pattern up to the fabric's symmetry: on the
    store seed A filled, seed B replays more and learns less than on a cold store, and every
    flow delivers its bytes."""
    assert _collisions(SEED_A) != _collisions(SEED_B)
    path = tmp_path / "m.sqlite"
    with MemoStore(path) as store:
        first = run_packet(DAG, TOPO, NET, seed=SEED_A, wormhole=WormholeSpec(), memo_store=store)
    assert first.counters["memo_inserts"] >= 1
    with MemoStore(path) as store:
        r = run_packet(DAG, TOPO, NET, seed=SEED_B, wormhole=WormholeSpec(), memo_store=store)
    with MemoStore(tmp_path / "cold.sqlite") as store:
        cold = run_packet(DAG, TOPO, NET, seed=SEED_B, wormhole=WormholeSpec(), memo_store=store)
    c = r.counters
    assert c["memo_hits"] > cold.counters["memo_hits"]
    assert c["memo_inserts"] < cold.counters["memo_inserts"]
    assert (r.node_finish_ps[FLOWS] > 0).all()
    qp = r.flow_qp[FLOWS]
    np.testing.assert_array_equal(r.qp_acked_bytes[qp] + r.qp_credit_bytes[qp], SIZE)
