"""Upper bound on per-flow skipping for the k=8 fat-tree permutation (128 hosts x 10 MB).

From one packet run's congestion-control rates, sampled every 5 µs, count the flow-time a
fast-forward could skip if each flow were skipped *alone* (not its whole partition): from the
moment its own last ``window`` samples lie within ``theta`` of their mean until the next start or
finish of a flow sharing one of its data ports (or two base RTTs, 10 µs, before its own end).
After a skip the flow needs a new window. ``--guard`` also ends a skip when a neighbour's rate
leaves ``theta`` of its value at the skip's start: the condition for the frozen rate to stay
right. Prints the skippable share of the flow-time (events scale with it) and records it in
``bench/results/permutation_skip_bound.jsonl`` and ``.md`` (the newest row per settings) with the
commit and machine; ``--no-record`` only prints.

Run: ``python bench/permutation_skip_bound.py [--cc hpcc] [--theta 0.05] [--window 20] [--guard]
[--no-record]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np
import polars as pl
from _provenance import git_commit, machine
from engine import _derangement, _fattree, _flows

from wormsim.netsim.formats.hpcc_io import flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import Monitors, run_packet

OUT = Path(__file__).parent / "results"
SAMPLE_PS = 5_000_000
TAIL_PS = 10_000_000


def skippable_share(cc: str, theta: float, window: int, guard: bool, k: int = 8) -> float:
    """Share of the flow-time (0..1) that per-flow skipping could skip (see module doc)."""
    n = k**3 // 4
    perm = _derangement(n, 1)
    dag, fn = flows_to_dag(_flows([(i, perm[i]) for i in range(n)], 10_000_000))
    run = run_packet(
        dag, _fattree(k), NetworkSpec(cc=cc), routing="ns3", monitors=Monitors(SAMPLE_PS)
    )
    r_off, r_ports = run.routes
    qp = run.flow_qp[fn]
    start, fin = run.node_start_ps[fn], run.node_finish_ps[fn]
    ports = [set(r_ports[r_off[2 * q] : r_off[2 * q + 1]].tolist()) for q in qp]
    times, rates = [], []
    for q in qp:
        s = run.rate_samples.filter(pl.col("qp") == q).sort("time_ps")
        times.append(s["time_ps"].to_numpy())
        rates.append(s["rate_bps"].to_numpy().astype(float))
    total = skipped = 0.0
    for i in range(n):
        nbrs = [j for j in range(n) if j != i and ports[i] & ports[j]]
        changes = np.array(sorted({*start[nbrs].tolist(), *fin[nbrs].tolist()}), np.int64)
        t, x = times[i], rates[i]
        total += fin[i] - start[i]
        s = window
        while s < len(t):
            w = x[s - window : s]
            m = w.mean()
            if m <= 0 or (np.abs(w - m) > theta * m).any():
                s += 1
                continue
            t0 = t[s - 1]
            nxt = changes[changes > t0]
            t1 = min(nxt[0] if nxt.size else fin[i], fin[i] - TAIL_PS)
            for j in nbrs if guard else ():
                a, b = np.searchsorted(times[j], t0), np.searchsorted(times[j], t1)
                if a < b:
                    r0 = rates[j][max(a - 1, 0)]
                    moved = np.nonzero(np.abs(rates[j][a:b] - r0) > theta * max(r0, 1.0))[0]
                    if moved.size:
                        t1 = min(t1, times[j][a + moved[0]])
            if t1 > t0:
                skipped += t1 - t0
                s = int(np.searchsorted(t, t1)) + window
            else:
                s += 1
    return skipped / total


def _record(row: dict) -> None:
    """Append ``row`` and rewrite the table of the newest row per settings."""
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "permutation_skip_bound.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    with open(OUT / "permutation_skip_bound.jsonl") as f:
        latest = {(r["cc"], r["theta"], r["window"], r["guard"]): r for r in map(json.loads, f)}
    cols = ["commit", "cc", "theta", "window", "guard", "skippable_pct", "max_speedup"]
    md = [
        "# Per-flow skipping bound on the k=8 fat-tree permutation (128 x 10 MB)",
        "",
        "From one packet run's congestion-control rates every 5 us: the share of the flow-time "
        "a flow skipped alone could skip (`bench/permutation_skip_bound.py`); newest row per "
        "settings.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    md += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for _, r in sorted(latest.items())]
    (OUT / "permutation_skip_bound.md").write_text("\n".join(md) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default="hpcc")
    parser.add_argument("--theta", type=float, default=0.05)
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--guard", action="store_true")
    parser.add_argument("--no-record", action="store_true", help="print only")
    a = parser.parse_args()
    share = skippable_share(a.cc, a.theta, a.window, a.guard)
    print(
        f"{a.cc}, theta {a.theta}, window {a.window}, guard {a.guard}: "
        f"{100 * share:.1f} % of the flow-time skippable (at most {1 / (1 - share):.1f}x)"
    )
    if not a.no_record:
        _record(
            {
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "commit": git_commit(),
                "machine": machine(),
                "cc": a.cc,
                "theta": a.theta,
                "window": a.window,
                "guard": a.guard,
                "skippable_pct": round(100 * share, 1),
                "max_speedup": round(1 / (1 - share), 1),
            }
        )


if __name__ == "__main__":
    main()
