"""Benchmark: build the ops and the flow DAG of GPT-175B iterations on 1024 GPUs.

Scenarios (each in its own process, so peak memory is per scenario):

- ``megatron``: the Megatron-LM README layout, t=8, p=16, d=8, global batch 1536 (m = 192
  micro-batches), sequence parallelism off: ~10 M op rows, ~17 M DAG nodes.
- ``table1``: the Wormhole Table 1 layout (examples/table1/gpt175b-1024.yaml), TP8-DP16-PP8, m = 8.

Times ``build_ops`` (workload), ``expand_dag`` (collective) and ``validate_dag`` (acyclicity) and
records peak RSS. Usage::

    python bench/dag_build.py [--scenario megatron|table1|all] [--no-record]

Appends to ``bench/results/dag_build.jsonl`` and rewrites ``bench/results/dag_build.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from _provenance import git_commit, machine

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def run_scenario(name: str) -> dict:
    """Build one scenario in this process and return its figures."""
    from wormsim.collective.dag import dag_to_arrays, validate_dag
    from wormsim.collective.expand import expand_dag
    from wormsim.experiment import load_experiment
    from wormsim.workload.builder import build_ops

    cfg = load_experiment(ROOT / "examples" / "table1" / "gpt175b-1024.yaml")
    if name == "megatron":
        cfg = cfg.model_copy(
            update={
                "parallel": cfg.parallel.model_copy(
                    update={
                        "tp": 8,
                        "pp": 16,
                        "dp": 8,
                        "global_batch": 1536,
                        "sequence_parallel": False,
                    }
                )
            }
        )
    t0 = time.perf_counter()
    ops = build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)
    t1 = time.perf_counter()
    dag = expand_dag(ops, (cfg.cluster.gpus_per_node, cfg.cluster.gpus), cfg.collective)
    t2 = time.perf_counter()
    arrays = dag_to_arrays(dag)
    validate_dag(arrays)
    t3 = time.perf_counter()
    return {
        "scenario": name,
        "layout": f"t{cfg.parallel.tp} p{cfg.parallel.pp} d{cfg.parallel.dp} "
        f"gb{cfg.parallel.global_batch} sp={cfg.parallel.sequence_parallel}",
        "op_rows": ops.height,
        "dag_nodes": dag.height,
        "flows": int((arrays.kind == 0).sum()),
        "edges": int(arrays.child_index.shape[0]),
        "workload_s": round(t1 - t0, 2),
        "collective_s": round(t2 - t1, 2),
        "validate_s": round(t3 - t2, 2),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="all", choices=["megatron", "table1", "all", "_one"])
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.scenario == "_one":
        print(json.dumps(run_scenario(args.name)))
        return
    names = ["table1", "megatron"] if args.scenario == "all" else [args.scenario]
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
    }
    records = []
    for name in names:
        out = subprocess.check_output(
            [sys.executable, __file__, "--scenario", "_one", "--name", name], text=True
        )
        rec = {**meta, **json.loads(out.strip().splitlines()[-1])}
        records.append(rec)
        print(json.dumps(rec))
    if args.no_record:
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / "dag_build.jsonl", "a") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    rows = [json.loads(x) for x in (RESULTS / "dag_build.jsonl").read_text().splitlines() if x]
    rows = [r for r in rows if "workload_s" in r]
    cols = [
        "date",
        "commit",
        "machine",
        "scenario",
        "layout",
        "op_rows",
        "dag_nodes",
        "flows",
        "edges",
        "workload_s",
        "collective_s",
        "validate_s",
        "peak_rss_mb",
    ]
    lines = [
        "# DAG construction at 1024 GPUs (GPT-175B)",
        "",
        "`python bench/dag_build.py`: real `build_ops` -> `expand_dag` -> `validate_dag`, "
        "each scenario in its own process (peak RSS per scenario).",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(f"{r[c]:,}" if isinstance(r[c], int) else str(r[c]) for c in cols)
            + " |"
        )
    (RESULTS / "dag_build.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
