"""Behaviour fingerprint: event counts and per-flow FCTs of both engines, to prove a refactor
changed nothing.

Runs every HPCC ns-3 cross-check scenario of ``tests/data/ns3`` (six scenarios x four CCs) in
packet and flow mode through :func:`wormsim.netsim.scenario.run_hpcc_scenario`, the packet
engine benchmark's k=8 permutation and 64-host ring (``bench/engine.py``), and one Wormhole run
(GPT-7B/64 at 1/10 message size, fresh memo store). For each it records the event count, the
SHA-256 of the finish times (ps) and, for the ns-3 scenarios, the mean per-flow FCT error against
ns-3. Appends a record to ``bench/results/behaviour.jsonl`` and compares it with the previous
record of that file, case by case::

    python bench/behaviour.py            # run, record, compare with the last record
    python bench/behaviour.py --no-record

Exit status 1 when any fingerprint differs from the previous record's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))

from _provenance import git_commit, machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NS3 = ROOT / "tests" / "data" / "ns3"
OUT = Path(__file__).parent / "results"
CCS = ("hp", "dcqcn", "timely", "dctcp")


def _digest(finish_ps: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(finish_ps, np.int64).tobytes()).hexdigest()[:16]


def ns3_cases() -> list[dict]:
    """Every cross-check scenario in packet and flow mode."""
    from wormsim.netsim.scenario import run_hpcc_scenario

    out = []
    for scen in sorted(p.name for p in NS3.iterdir() if p.is_dir()):
        for cc in CCS:
            d = NS3 / scen / cc
            ref = pl.read_csv(d / "fct.csv").sort("flow_id")["fct_ns"].to_numpy().astype(float)
            for mode in ("packet", "flow"):
                r = run_hpcc_scenario(
                    d / "topology.txt", d / "flow.txt", d / "config.txt", mode=mode
                )
                fct_ns = (r.finish_ps - r.flows.start_ps) / 1e3
                err = float(np.mean(np.abs(fct_ns - ref) / ref))
                out.append(
                    {
                        "case": f"{scen}/{cc}/{mode}",
                        "events": int(r.counters.get("events_processed", 0)),
                        "finish_sha": _digest(r.finish_ps),
                        "mean_flow_err_pct": round(100 * err, 4),
                        "wall_s": round(float(r.counters.get("sim_wall_s", 0.0)), 3),
                    }
                )  # fmt: skip
                print(f"{out[-1]['case']:32s} {out[-1]['events']:>11,d} {out[-1]['finish_sha']}")
    return out


def engine_cases() -> list[dict]:
    """The packet engine benchmark's two large cases (k=8 permutation, 64-host ring)."""
    from engine import _derangement, _fattree, _flows, ring_allreduce_dag

    from wormsim.netsim.formats.hpcc_io import flows_to_dag
    from wormsim.netsim.network_config import NetworkSpec
    from wormsim.netsim.packet.run import run_packet

    ft8 = _fattree(8)
    perm = _derangement(128, 1)
    cases = {
        "fattree k=8 perm 128x10MB": flows_to_dag(
            _flows([(i, perm[i]) for i in range(128)], 10_000_000)
        )[0],
        "ring allreduce 64 hosts 64MB": ring_allreduce_dag(64, 64_000_000),
    }
    out = []
    for name, dag in cases.items():
        r = run_packet(dag, ft8, NetworkSpec(cc="hpcc"), routing="ns3")
        out.append(
            {
                "case": name,
                "events": int(r.counters["events_processed"]),
                "finish_sha": _digest(r.node_finish_ps),
                "wall_s": round(float(r.counters["sim_wall_s"]), 3),
            }
        )
        print(f"{name:32s} {out[-1]['events']:>11,d} {out[-1]['finish_sha']}")
    return out


def wormhole_case(ports: str = "data_and_ack") -> dict:
    """GPT-7B/64 at 1/10 message size in Wormhole mode on a fresh memo store, partitions over
    ``ports`` (the library default; the example file itself sets ``auto``)."""
    from wormhole import _inputs, scaled_dag

    from wormsim.memo import MemoStore
    from wormsim.netsim.packet.run import run_packet

    cfg, dag = scaled_dag("gpt7b-64", 0.1)
    arrays, topo, net = _inputs(cfg, dag, "hpcc")
    with tempfile.TemporaryDirectory() as tmp, MemoStore(Path(tmp) / "memo.sqlite") as store:
        r = run_packet(
            arrays, topo, net, routing=cfg.sim.routing, seed=cfg.sim.seed,
            wormhole=cfg.sim.wormhole.model_copy(update={"partition_ports": ports}),
            memo_store=store,
        )  # fmt: skip
    rec = {
        "case": "wormhole gpt7b-64 x0.1 hpcc" + ("" if ports == "data_and_ack" else f" {ports}"),
        "events": int(r.counters["events_processed"]),
        "finish_sha": _digest(r.node_finish_ps),
        "wall_s": round(float(r.counters["sim_wall_s"]), 3),
    }
    print(f"{rec['case']:32s} {rec['events']:>11,d} {rec['finish_sha']}")
    return rec


def compare(old: dict, new: dict) -> list[str]:
    """Cases whose event count or finish times differ between two records."""
    before = {c["case"]: c for c in old["cases"]}
    diffs = []
    for c in new["cases"]:
        b = before.get(c["case"])
        if b is not None and (b["events"], b["finish_sha"]) != (c["events"], c["finish_sha"]):
            diffs.append(f"{c['case']}: events {b['events']:,} -> {c['events']:,}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    t = time.perf_counter()
    cases = ns3_cases() + engine_cases() + [wormhole_case(), wormhole_case("auto")]
    rec = {
        "commit": git_commit(),
        "machine": machine(),
        "cases": cases,
        "total_s": round(time.perf_counter() - t, 1),
    }
    log = OUT / "behaviour.jsonl"
    previous = None
    if log.exists():
        lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
        previous = json.loads(lines[-1]) if lines else None
    status = 0
    if previous is not None:
        diffs = compare(previous, rec)
        print(f"against {previous.get('commit', '?')}: " + ("identical" if not diffs else ""))
        for d in diffs:
            print("  DIFFERS", d)
        status = 1 if diffs else 0
    if not args.no_record:
        with log.open("a") as f:
            f.write(json.dumps(rec) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
