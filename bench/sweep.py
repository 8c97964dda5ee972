"""Sweep benchmark: one Wormhole sweep with the memo store shared or private, on 1 or 2 workers.

The same sweep runs four ways side by side in one process tree: ``memo: private`` (every point
starts from an empty store) and ``memo: shared`` (one store, fresh at the start, that later points
read what earlier ones wrote), each with ``--jobs 1`` and ``--jobs 2``. For each it records the
sweep's wall time, the points' summed engine time and memo hits/misses/inserts, and the ratios:
private/shared wall (what sharing buys) and 1-worker/2-worker wall (what the pool buys). Appends
a record to ``bench/results/sweep.jsonl`` and rewrites ``bench/results/sweep.md``::

    python bench/sweep.py                         # 4 points of a data-parallel job, 16 GPUs
    python bench/sweep.py --experiment examples/table1/gpt7b-64.yaml --points 4

Absolute times on shared machines are noisy: quote the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))

from _provenance import git_commit, machine  # noqa: E402

from wormsim.pipelines.sweep import run_sweep  # noqa: E402

OUT = Path(__file__).parent / "results"

#: Data parallelism only, one GPU per server, on a fat-tree: the fabric traffic is the gradient
#: all-reduce, a pattern that repeats from point to point.
DP_JOB = {
    "name": "dp16",
    "model": {
        "num_layers": 4,
        "hidden_size": 2048,
        "num_heads": 16,
        "vocab_size": 512,
        "seq_length": 512,
    },  # fmt: skip
    "parallel": {"tp": 1, "pp": 1, "global_batch": 16},
    "cluster": {"gpus": 16, "gpus_per_node": 1, "topology": "fat_tree"},
    "network": {"cc": "hpcc"},
}


def _sweep(tmp: Path, experiment: object, points: int, memo: str) -> Path:
    effs = [round(0.5 - 0.03 * i, 3) for i in range(points)]
    spec = {"name": f"bench-{memo}", "experiment": experiment, "mode": "wormhole",
            "grid": {"hardware.efficiency": effs}, "memo": memo}  # fmt: skip
    path = tmp / f"sweep-{memo}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _one(tmp: Path, experiment: object, points: int, memo: str, jobs: int) -> dict:
    store = tmp / f"store-{memo}-{jobs}.sqlite"
    os.environ["WORMSIM_MEMO_STORE"] = str(store)  # a fresh shared store per configuration
    path = _sweep(tmp, experiment, points, memo)
    t0 = time.perf_counter()
    table = run_sweep(path, tmp / f"out-{memo}-{jobs}", jobs=jobs, echo=lambda _: None)
    wall = time.perf_counter() - t0
    ok = table.filter(table["status"] == "ok")
    return {
        "memo": memo,
        "jobs": jobs,
        "points": table.height,
        "ok": ok.height,
        "wall_s": round(wall, 2),
        "engine_s": round(float(ok["sim_wall_s"].sum()), 2),
        "memo_hits": int(ok["memo_hits_count"].sum()),
        "memo_misses": int(ok["memo_misses_count"].sum()),
        "memo_inserts": int(ok["memo_inserts_count"].sum()),
        "iteration_ms": [round(x, 4) for x in ok.sort("point")["iteration_time_ms"].to_list()],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", type=Path, help="Base experiment (default: a 16-GPU DP job).")
    ap.add_argument("--points", type=int, default=4, help="Points (GPU efficiencies).")
    ap.add_argument("--no-record", action="store_true", help="Print only.")
    args = ap.parse_args()
    experiment: object = str(args.experiment.resolve()) if args.experiment else DP_JOB
    with tempfile.TemporaryDirectory(prefix="wormsim-bench-sweep-") as tmp:
        rows = [
            _one(Path(tmp), experiment, args.points, memo, jobs)
            for memo in ("private", "shared")
            for jobs in (1, 2)
        ]
    by = {(r["memo"], r["jobs"]): r for r in rows}
    ratios = {
        "sharing_wall_ratio_1job": by[("private", 1)]["wall_s"] / by[("shared", 1)]["wall_s"],
        "sharing_engine_ratio_1job": by[("private", 1)]["engine_s"]
        / max(by[("shared", 1)]["engine_s"], 1e-9),
        "pool_wall_ratio_shared": by[("shared", 1)]["wall_s"] / by[("shared", 2)]["wall_s"],
        "pool_wall_ratio_private": by[("private", 1)]["wall_s"] / by[("private", 2)]["wall_s"],
    }
    record = {
        "commit": git_commit(),
        "machine": machine(),
        "experiment": str(args.experiment) if args.experiment else "dp16 (bench/sweep.py)",
        "points": args.points,
        "runs": rows,
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
    }
    lines = [
        "# Sweep benchmark (bench/sweep.py)",
        "",
        f"commit {record['commit']}, {record['machine']}; experiment {record['experiment']}, "
        f"{args.points} Wormhole points (GPU efficiency varied), fresh stores",
        "",
        "| memo | jobs | wall s | engine s | hits | misses | inserts |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['memo']} | {r['jobs']} | {r['wall_s']} | {r['engine_s']} | {r['memo_hits']} "
            f"| {r['memo_misses']} | {r['memo_inserts']} |"
            for r in rows
        ),
        "",
        *(f"- {k}: {v:.3f}" for k, v in record["ratios"].items()),
        "",
    ]
    print("\n".join(lines))
    if not args.no_record:
        OUT.mkdir(exist_ok=True)
        with open(OUT / "sweep.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        (OUT / "sweep.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
