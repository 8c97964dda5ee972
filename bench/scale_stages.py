"""Benchmark: the flow-mode pipeline stage by stage at cluster scale (issue 43).

GPT-175B (``examples/table1/gpt175b-1024.yaml``: TP8-PP8, sequence parallel, micro-batch 1,
rail-optimized, HPCC) on ``--gpus`` GPUs: DP = GPUs / 64 and global batch = DP x 8 (8
micro-batches per pipeline, the Table 1 shape at every size). Each size runs as its own process
(so peak memory is per size), with the address space capped (``--cap-gb``, default 14), through
the same stage steps as ``wormsim pipeline run --mode flow`` (workload, collective, netsim,
analysis and report), timed one by one. Per stage it records the wall time and the peak RSS
within it (the kernel's high-water mark reset at each stage's start), and the bytes of peak RSS
per op (workload), per DAG node (collective) and per flow (netsim, analysis); also the netsim
stage's flow-state build and simulation, the report folder's size, the iteration time, a hash of
every node's finish time and one of the whole ``flows.parquet`` (every flow's times, route
facts and labels), and the memory the run was estimated to need before it started.

Usage::

    python bench/scale_stages.py --gpus 512 1024 2048 [--cap-gb 14] [--no-record] [--keep DIR]
    python bench/scale_stages.py --gpus 1024 4096 --mode wormhole --cap-gb 20

``--mode wormhole`` runs the same stages in Wormhole mode (library defaults, a cold memo store
in the run folder) and adds the engine's event and memo counts; compare its iteration time with
the flow-mode row of the same size.

Appends one row per size to ``bench/results/scale_stages.jsonl`` and rewrites
``bench/results/scale_stages.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _provenance import git_commit, machine
from _records import write_md

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
EXPERIMENT = ROOT / "examples" / "table1" / "gpt175b-1024.yaml"
STAGES = ("workload", "collective", "netsim", "analysis")


def _status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) of this process (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def overrides(gpus: int) -> list[str]:
    """The ``--set`` items of the GPT-175B shape on ``gpus`` GPUs."""
    dp = gpus // 64
    return [f"cluster.gpus={gpus}", f"parallel.dp={dp}", f"parallel.global_batch={dp * 8}"]


def run_size(gpus: int, keep: Path | None, mode: str = "flow") -> dict:
    """Run the pipeline for one size in ``mode`` in this process; its figures."""
    t_import = time.perf_counter()
    from wormsim.analysis.report import alone_runner, analyse, write_report
    from wormsim.analysis.run_data import load_run
    from wormsim.collective.stage import stage_collective
    from wormsim.experiment import init_run_dir, load_experiment
    from wormsim.netsim.stage import simulate_run_dir
    from wormsim.progress import set_enabled
    from wormsim.rundir import write_json
    from wormsim.workload import scale as scale_mod
    from wormsim.workload.stage import stage_workload

    set_enabled(False)
    tmp = Path(tempfile.mkdtemp(prefix="scale43-"))
    items = [*overrides(gpus), f"sim.mode={mode}"]
    if mode == "wormhole":  # a cold store of its own
        items.append(f"sim.wormhole.memo_path={tmp / 'memo.sqlite'}")
    cfg = load_experiment(EXPERIMENT, items)
    rec: dict = {"gpus": gpus, "mode": mode, "layout": f"t8 p8 d{gpus // 64}", "import_s": 0.0}
    if hasattr(scale_mod, "estimate_memory"):  # what the run prints before it starts
        c = cfg.cluster
        sc = scale_mod.estimate_scale(
            cfg.model, cfg.parallel, cfg.hardware, c.gpus, c.gpus_per_node, cfg.collective,
            c.host_link_gbps,
        )  # fmt: skip
        engine = None
        if mode != "flow":
            from wormsim.netsim.packet.run import engine_bytes

            engine = engine_bytes(cfg.network, cfg.sim.wormhole if mode == "wormhole" else None)
        est = scale_mod.estimate_memory(sc, mode, engine)
        rec.update(est_dag_nodes=sc.dag_nodes, est_flows=sc.flows)
        rec["estimate_mb"] = int(est.peak_bytes // 2**20)
    rec["import_s"] = round(time.perf_counter() - t_import, 2)
    run_dir = tmp / "run"
    run_dir.mkdir()
    t_all = time.perf_counter()
    peak_all = 0

    def stage(name: str, fn):
        nonlocal peak_all
        _reset_peak()
        t = time.perf_counter()
        out = fn()
        rec[f"{name}_s"] = round(time.perf_counter() - t, 2)
        peak = _status_kb("VmHWM") * 1024
        rec[f"{name}_peak_mb"] = peak // 2**20
        peak_all = max(peak_all, peak)
        return out, peak

    try:
        init_run_dir(cfg, run_dir, items)
        # as the orchestrator: nothing of a stage is kept but what the next one is handed
        n_ops, p_w = stage("workload", lambda: stage_workload(cfg, run_dir).height)
        built: list = []  # the DAG, handed to netsim and dropped after it
        n_nodes, p_c = stage(
            "collective", lambda: built.append(stage_collective(run_dir, cfg)) or built[0].height
        )
        summary, p_n = stage(
            "netsim", lambda: simulate_run_dir(run_dir, cfg, mode, dag=built.pop())
        )
        write_json(run_dir / "summary.json", summary)

        def analysis():
            rep = analyse(load_run(run_dir), alone_runner(cfg, mode))
            write_report(rep)

        _, p_a = stage("analysis", analysis)
        n_flows = int(summary["flows"])
        rec.update(
            ops=n_ops,
            dag_nodes=n_nodes,
            flows=n_flows,
            total_s=round(time.perf_counter() - t_all, 1),
            peak_mb=peak_all // 2**20,
            vm_peak_mb=_status_kb("VmPeak") // 1024,
            B_per_op_workload=round(p_w / n_ops),
            B_per_node_collective=round(p_c / n_nodes),
            B_per_flow_netsim=round(p_n / n_flows),
            B_per_flow_analysis=round(p_a / n_flows),
            flow_build_s=round(summary.get("build_s", 0.0), 2),
            flow_sim_s=round(summary.get("sim_wall_s", 0.0), 2),
            report_mb=round(
                sum(f.stat().st_size for f in (run_dir / "report").rglob("*") if f.is_file())
                / 2**20,
                1,
            ),
            run_dir_mb=round(
                sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file()) / 2**20, 1
            ),
            iteration_time_s=summary["iteration_time_s"],
        )
        for key in ("events_processed", "memo_hits", "memo_misses"):
            if key in summary:
                rec[key] = summary[key]
        import polars as pl

        fin = pl.read_parquet(run_dir / "nodes.parquet", columns=["finish_ps"])["finish_ps"]
        rec["finish_sha256"] = hashlib.sha256(fin.to_numpy().tobytes()).hexdigest()[:16]
        flows = pl.read_parquet(run_dir / "flows.parquet").sort("flow_id")
        rec["flows_hash"] = f"{int(flows.hash_rows(seed=0).sum()) % 2**64:016x}"
        if "estimate_mb" in rec:
            rec["estimate_err_pct"] = round(100 * (rec["estimate_mb"] / rec["peak_mb"] - 1), 1)
    finally:
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.move(str(run_dir), keep)
        shutil.rmtree(tmp, ignore_errors=True)
    return rec


COLS = [
    "date",
    "commit",
    "machine",
    "gpus",
    "mode",
    "ops",
    "dag_nodes",
    "flows",
    "workload_s",
    "workload_peak_mb",
    "collective_s",
    "collective_peak_mb",
    "netsim_s",
    "flow_build_s",
    "flow_sim_s",
    "netsim_peak_mb",
    "analysis_s",
    "analysis_peak_mb",
    "total_s",
    "peak_mb",
    "vm_peak_mb",
    "estimate_mb",
    "B_per_op_workload",
    "B_per_node_collective",
    "B_per_flow_netsim",
    "B_per_flow_analysis",
    "report_mb",
    "iteration_time_s",
    "events_processed",
    "memo_hits",
    "finish_sha256",
    "flows_hash",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--cap-gb", type=float, default=14.0, help="address-space cap per size")
    parser.add_argument("--keep", type=Path, help="keep the run directory (one size) here")
    parser.add_argument("--mode", choices=("flow", "wormhole"), default="flow")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_size(args.one, args.keep, args.mode)))
        return
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
    }
    cap = int(args.cap_gb * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    for gpus in args.gpus:
        cmd = [sys.executable, __file__, "--one", str(gpus), "--mode", args.mode]
        if args.keep:
            cmd += ["--keep", str(args.keep)]
        proc = subprocess.run(cmd, text=True, capture_output=True, preexec_fn=limit)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            rec = {**meta, "gpus": gpus, "error": proc.stderr.strip().splitlines()[-1:]}
        else:
            rec = {**meta, **json.loads(proc.stdout.strip().splitlines()[-1])}
        print(json.dumps(rec), flush=True)
        if args.no_record:
            continue
        RESULTS.mkdir(parents=True, exist_ok=True)
        with open(RESULTS / "scale_stages.jsonl", "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        write_md(
            RESULTS / "scale_stages.jsonl",
            RESULTS / "scale_stages.md",
            "GPT-175B flow mode, stage by stage (issue 43)",
            "`python bench/scale_stages.py --gpus N ...`: TP8-PP8, DP = N/64, global batch DP x 8, "
            "rail-optimized, HPCC, `--mode flow`; each size in its own process under an "
            "address-space cap. Per stage: wall time and peak RSS within the stage (MB); bytes "
            "of that peak per op, DAG node or flow; report folder size; a hash of every node's "
            "finish time (equal = the same result).",
            COLS,
        )


if __name__ == "__main__":
    main()
