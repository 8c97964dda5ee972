"""Packet-engine benchmark: 8:1 incast, k=8 fat-tree permutation (HPCC), 64-host ring all-reduce.

Run: ``python bench/engine.py``. Appends a record to ``bench/results/engine.jsonl`` and rewrites
``bench/results/engine.md``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import random
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from wormsim.collective.dag import KIND_FLOW, DagArrays
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag, read_topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import _warm, run_packet

OUT = Path(__file__).parent / "results"


def fattree_topology_txt(k: int, rate: str = "100Gbps", delay: str = "0.001ms") -> str:
    """k-ary fat-tree in HPCC format, numbered as tests/data/ns3/fattree4-perm/README.md."""
    h = k // 2
    H = k**3 // 4
    edge = lambda p, e: H + p * h + e  # noqa: E731
    agg = lambda p, a: H + k * h + p * h + a  # noqa: E731
    core = lambda a, c: H + 2 * k * h + a * h + c  # noqa: E731
    n = H + k * h * 2 + h * h
    links = []
    for p in range(k):
        for e in range(h):
            for x in range(h):
                links.append((p * h * h + e * h + x, edge(p, e)))
            for a in range(h):
                links.append((edge(p, e), agg(p, a)))
        for a in range(h):
            for c in range(h):
                links.append((agg(p, a), core(a, c)))
    lines = [f"{n} {n - H} {len(links)}", " ".join(str(i) for i in range(H, n))]
    lines += [f"{a} {b} {rate} {delay} 0" for a, b in links]
    return "\n".join(lines) + "\n"


def _fattree(k: int) -> Topology:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "topology.txt"
        p.write_text(fattree_topology_txt(k))
        return read_topology(p)


def _derangement(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    while True:
        d = list(range(n))
        rng.shuffle(d)
        if all(d[i] != i for i in range(n)):
            return d


def _flows(pairs, size):
    n = len(pairs)
    return FlowSet(
        src=np.array([a for a, _ in pairs], np.int32),
        dst=np.array([b for _, b in pairs], np.int32),
        pg=np.full(n, 3, np.int32),
        dport=np.full(n, 100, np.int32),
        size_bytes=np.full(n, size, np.int64),
        start_ps=np.zeros(n, np.int64),
    )


def ring_allreduce_dag(n: int, size: int) -> DagArrays:
    """Ring all-reduce of ``size`` bytes over hosts 0..n-1: 2(n-1) steps of n flows of size/n;
    step s of rank r depends on step s-1 of rank r-1 (the data it forwards)."""
    steps = 2 * (n - 1)
    chunk = size // n
    m = steps * n
    kind = np.full(m, KIND_FLOW, np.int8)
    src = np.tile(np.arange(n, dtype=np.int32), steps)
    dst = (src + 1) % n
    dep = np.zeros(m, np.int32)
    dep[n:] = 1
    offs = np.zeros(m + 1, np.int64)
    child = []
    for s in range(steps - 1):
        for r in range(n):
            child.append((s + 1) * n + (r + 1) % n)
    offs[1:] = np.concatenate([np.ones((steps - 1) * n, np.int64), np.zeros(n, np.int64)]).cumsum()
    return DagArrays(
        kind=kind,
        src=src,
        dst=dst.astype(np.int32),
        rank=np.full(m, -1, np.int32),
        size_bytes=np.full(m, chunk, np.int64),
        duration_ps=np.zeros(m, np.int64),
        dep_count=dep,
        child_offsets=offs,
        child_index=np.array(child, np.int64),
    )


def _case(name, dag, topo, net, routing="ns3"):
    t = time.perf_counter()
    res = run_packet(dag, topo, net, routing=routing)
    total = time.perf_counter() - t
    c = res.counters
    w = c["sim_wall_s"]
    rec = {
        "case": name,
        "cc": net.cc,
        "sim_wall_s": round(w, 3),
        "total_s": round(total, 3),
        "events": c["events_processed"],
        "data_hops": c["data_packet_hops"],
        "hops_per_s": round(c["data_packet_hops"] / w),
        "events_per_s": round(c["events_processed"] / w),
        "sim_time_us": c["sim_end_ps"] / 1e6,
        "unfinished": int((res.node_finish_ps < 0).sum()),
        "peak_packets": c["peak_packets"],
    }
    print(
        f"{name:28s} wall {w:7.2f}s  events {rec['events']:>11,d}  hops {rec['data_hops']:>10,d}"
        f"  {rec['hops_per_s'] / 1e6:6.2f} M hops/s  {rec['events_per_s'] / 1e6:6.2f} M ev/s"
    )
    return rec


def main() -> None:
    compile_s = _warm()
    print(f"compile/cache-load of the kernels: {compile_s:.1f} s")
    cases = []
    star = Topology.from_links(10, [9], [(i, 9, 100e9, 1_000_000) for i in range(9)])
    dag, _ = flows_to_dag(_flows([(i, 8) for i in range(8)], 10_000_000))
    cases.append(_case("incast 8:1 10MB (dcqcn)", dag, star, NetworkSpec(cc="dcqcn")))
    cases.append(_case("incast 8:1 10MB (hpcc)", dag, star, NetworkSpec(cc="hpcc")))
    ft8 = _fattree(8)
    perm = _derangement(128, 1)
    dag, _ = flows_to_dag(_flows([(i, perm[i]) for i in range(128)], 10_000_000))
    cases.append(_case("fattree k=8 perm 128x10MB", dag, ft8, NetworkSpec(cc="hpcc")))
    ft = _fattree(8)
    cases.append(
        _case(
            "ring allreduce 64 hosts 64MB",
            ring_allreduce_dag(64, 64_000_000),
            ft,
            NetworkSpec(cc="hpcc"),
        )
    )
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], capture_output=True, text=True
        ).stdout.strip()
        commit = commit + ("+uncommitted" if dirty else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        commit = "uncommitted"
    record = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "processor": platform.processor(),
        },
        "compile_s": round(compile_s, 2),
        "cases": cases,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "engine.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    md = [
        "# Packet engine benchmark",
        "",
        f"{record['date']}, commit `{commit}`, "
        f"{record['machine']['platform']}, {os.cpu_count()} CPUs; one core used.",
        "",
        f"Kernel compile / cache load: {compile_s:.1f} s (not included below).",
        "",
        "| case | cc | wall s | events | data hops | M hops/s | M events/s | sim time us |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        md.append(
            f"| {c['case']} | {c['cc']} | {c['sim_wall_s']} | {c['events']:,} | "
            f"{c['data_hops']:,} | {c['hops_per_s'] / 1e6:.2f} | "
            f"{c['events_per_s'] / 1e6:.2f} | {c['sim_time_us']:.0f} |"
        )
    md += ["", "HPCC ns-3 on the k=8 permutation: 20-25 s, ~0.3 M hops/s (reference)."]
    (OUT / "engine.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
