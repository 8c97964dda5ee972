"""Wormhole against packet mode on the k=8 fat-tree permutation (128 hosts x 10 MB, ns-3 ECMP).

Both modes run side by side in one process on the same flows; the Wormhole run starts from an
empty memo store. Prints and records the wall-time and event ratios, the skip and partition
counters, and the FCT error against packet mode: of the mean FCT (``fct_err_mean_pct``), the
mean of the per-flow errors (``fct_err_flow_mean_pct``) and the largest (``fct_err_max_pct``).

Run: ``python bench/wormhole_permutation.py [--ccs hpcc dcqcn ...] [--wh KEY=VALUE ...]
[--no-record]``. ``--wh`` overrides the Wormhole settings (e.g. ``partition_ports=data
window=8 theta=0.1``) to measure what the detector's settings buy here. Appends to
``bench/results/wormhole_permutation.jsonl`` and rewrites ``wormhole_permutation.md`` (the
newest row of each CC and settings).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from pathlib import Path

import numpy as np
from _provenance import git_commit, machine
from engine import _derangement, _fattree, _flows
from wormhole import _override

from wormsim.memo import MemoStore
from wormsim.netsim.formats.hpcc_io import flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import _warm, run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec

OUT = Path(__file__).parent / "results"
COUNTERS = ("skips", "skip_backs", "memo_hits", "memo_misses", "partitions_formed")


def row(
    cc: str, overrides: dict | None = None, hosts_k: int = 8, size: int = 10_000_000, seed: int = 1
) -> dict:
    """One (cc) row: packet and Wormhole (default settings, or ``overrides``) on the same
    permutation."""
    topo = _fattree(hosts_k)
    n = hosts_k**3 // 4
    perm = _derangement(n, seed)
    dag, fn = flows_to_dag(_flows([(i, perm[i]) for i in range(n)], size))
    net = NetworkSpec(cc=cc)
    ref = run_packet(dag, topo, net, routing="ns3")
    with tempfile.TemporaryDirectory() as d:
        wh = run_packet(
            dag,
            topo,
            net,
            routing="ns3",
            wormhole=WormholeSpec(**(overrides or {})),
            memo_store=MemoStore(Path(d) / "memo.sqlite"),
        )
    f0 = (ref.node_finish_ps[fn] - ref.node_start_ps[fn]).astype(float)
    f1 = (wh.node_finish_ps[fn] - wh.node_start_ps[fn]).astype(float)
    err = np.abs(f1 - f0) / f0
    p, w = ref.counters, wh.counters
    return {
        "cc": cc,
        "overrides": ",".join(f"{k}={v}" for k, v in (overrides or {}).items()) or "-",
        "flows": int(n),
        "packet_wall_s": round(p["sim_wall_s"], 2),
        "wormhole_wall_s": round(w["sim_wall_s"], 2),
        "speedup": round(p["sim_wall_s"] / w["sim_wall_s"], 2),
        "packet_events": int(p["events_processed"]),
        "wormhole_events": int(w["events_processed"]),
        "bytes_skipped_pct": round(100 * w["bytes_skipped"] / float(dag.size_bytes[fn].sum()), 2),
        **{k: int(w[k]) for k in COUNTERS},
        "fct_err_mean_pct": round(100 * abs(f1.mean() - f0.mean()) / f0.mean(), 3),
        "fct_err_flow_mean_pct": round(100 * err.mean(), 3),
        "fct_err_max_pct": round(100 * err.max(), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ccs", nargs="*", default=["hpcc", "dcqcn", "timely", "dctcp"])
    ap.add_argument(
        "--wh", nargs="*", default=[], metavar="KEY=VALUE", help="WormholeSpec overrides"
    )
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    overrides = dict(_override(x) for x in args.wh)
    _warm(True)
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
    }
    rows = []
    for cc in args.ccs:
        r = {**meta, **row(cc, overrides)}
        print(json.dumps(r), flush=True)
        rows.append(r)
    if args.no_record:
        return
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "wormhole_permutation.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    cols = [
        "commit",
        "cc",
        "overrides",
        "flows",
        "packet_wall_s",
        "wormhole_wall_s",
        "speedup",
        "packet_events",
        "wormhole_events",
        "bytes_skipped_pct",
        *COUNTERS,
        "fct_err_mean_pct",
        "fct_err_flow_mean_pct",
        "fct_err_max_pct",
    ]
    md = [
        "# Wormhole on the k=8 fat-tree permutation (128 x 10 MB, ns-3 ECMP)",
        "",
        "The newest row of each CC and Wormhole settings (`overrides`, `-` = defaults); packet and "
        "Wormhole side by side in one process, empty memo store; the commit of each row.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    with open(OUT / "wormhole_permutation.jsonl") as f:  # every recorded settings row, newest
        latest = {(r["cc"], r.get("overrides", "-")): r for r in map(json.loads, f)}
    md += [
        "| " + " | ".join(str(r.get(c, "-")) for c in cols) + " |"
        for _, r in sorted(latest.items(), key=lambda kv: (kv[0][1] != "-", kv[0][1], kv[0][0]))
    ]
    (OUT / "wormhole_permutation.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
