"""Benchmark: Wormhole mode against packet simulation on the Wormhole paper's Table 1 workloads.

For each workload (64 and 128 GPUs, GPT and MoE) and congestion control (HPCC, DCQCN, TIMELY), the
same flow DAG runs in packet mode and in wormhole mode, side by side in one process, and the table
records: packet wall, wormhole wall, speedup, events skipped, memo hits and misses, mean, p99 and
max per-flow FCT error and the iteration-time error (wormhole against packet). Each wormhole run
starts from an empty memo store (its hits are patterns it met earlier in the same run); the
``*_warm`` columns rerun it on the store the first run filled (the memo's use across runs).

``--scale`` multiplies every flow's bytes and every compute/delay duration by the same factor, so a
quick run keeps the iteration's shape with fewer packets (1.0 = full size). ``--sensitivity`` runs
one workload over a grid of (theta, window) instead, against one packet run.
``--partition-ports data_and_ack data`` runs wormhole once per partition rule against the same
packet run (``--partial-replay`` adds the partial replay of stored transients). ``--wormhole-only``
skips the packet run (for full-size rows where packet simulation takes hours): wall, events,
counters and peak memory only. Every row records the process's peak resident memory so far.

Usage::

    python bench/wormhole.py --scale 0.01                     # quick table
    python bench/wormhole.py --scale 1.0 --workloads gpt7b-64  # full size (long)
    python bench/wormhole.py --sensitivity --scale 0.01

Appends to ``bench/results/wormhole.jsonl`` (or ``wormhole_sensitivity.jsonl``) and rewrites the
matching ``.md`` table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import NamedTuple

import numpy as np
from _provenance import git_commit, machine
from _records import write_md

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
_KEY_COLS = ["date", "commit", "scale", "workload", "cc"]
WORKLOADS = ["gpt7b-64", "gpt13b-128", "moe8x7b-64", "moe8x13b-128"]
SCALE_WORKLOADS = ["gpt22b-256", "moe8x22b-256", "gpt175b-1024", "moe32x22b-1024"]


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far, GB (Linux ru_maxrss is in KiB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2)


CCS = ["hpcc", "dcqcn", "timely"]


def scaled_dag(workload: str, scale: float):
    """The workload's DAG with flow bytes and compute/delay durations multiplied by ``scale``."""
    from wormsim.collective.dag import scale_dag
    from wormsim.collective.expand import expand_dag
    from wormsim.experiment import load_experiment
    from wormsim.workload.builder import build_ops

    cfg = load_experiment(ROOT / "examples" / "table1" / f"{workload}.yaml")
    ops = build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)
    dag = expand_dag(ops, (cfg.cluster.gpus_per_node, cfg.cluster.gpus), cfg.collective)
    dag = scale_dag(dag, scale)
    return cfg, dag


def _inputs(cfg, dag, cc: str):
    from wormsim.collective.dag import dag_to_arrays
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.netsim.network_config import NetworkSpec

    return dag_to_arrays(dag), build_topology(cfg.cluster), NetworkSpec(cc=cc)


class _Reference(NamedTuple):
    """What a wormhole row needs of its packet run (node times and two counters)."""

    node_start_ps: np.ndarray
    node_finish_ps: np.ndarray
    counters: dict


def run_reference(cfg, dag, cc: str, cache: Path | None = None, tag: str = ""):
    """The packet-mode run every wormhole run of this (workload, cc) is compared with.

    With ``cache`` (a folder) the run is kept as ``<tag>-<cc>.npz`` keyed by the DAG's hash, the
    network and the wormsim version, and reused by later invocations: packet mode does not
    depend on anything Wormhole changes (it never enters that code), and a full-size reference
    takes half an hour at 256 GPUs. A reused reference keeps the wall time it was measured with
    (``packet_wall_s``), from another process: rows say so in ``reference``.
    """
    from wormsim.netsim.packet.run import run_packet
    from wormsim.netsim.wormhole.namespace import PACKET_MODEL

    arrays, topo, net = _inputs(cfg, dag, cc)
    key = hashlib.sha256(
        dag.hash_rows().to_numpy().tobytes() + net.model_dump_json().encode()
        + cfg.cluster.model_dump_json().encode() + version("wormsim").encode()
        + str(PACKET_MODEL).encode()
    ).hexdigest()[:16]  # fmt: skip
    path = cache / f"{tag}-{cc}.npz" if cache is not None else None
    if path is not None and path.exists():
        z = np.load(path, allow_pickle=False)
        if str(z["key"]) == key:
            counters = json.loads(str(z["counters"]))
            counters["reference"] = f"cached {path.name}"
            return _Reference(z["node_start_ps"], z["node_finish_ps"], counters)
    ref = run_packet(arrays, topo, net, routing=cfg.sim.routing, seed=cfg.sim.seed)
    if path is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(
            path, key=key, node_start_ps=ref.node_start_ps, node_finish_ps=ref.node_finish_ps,
            counters=json.dumps({k: ref.counters[k] for k in ("sim_wall_s", "events_processed")}),
        )  # fmt: skip
    return ref


def _wormhole_once(cfg, arrays, topo, net, spec, store, ref) -> dict:
    """One wormhole run on ``store`` and its figures against the packet run ``ref``."""
    from wormsim.collective.dag import KIND_FLOW
    from wormsim.netsim.packet.run import run_packet

    wh = run_packet(
        arrays,
        topo,
        net,
        routing=cfg.sim.routing,
        seed=cfg.sim.seed,
        wormhole=spec,
        memo_store=store,
    )
    flows = arrays.kind == KIND_FLOW
    fct_ref = (ref.node_finish_ps - ref.node_start_ps)[flows].astype(float)
    fct_wh = (wh.node_finish_ps - wh.node_start_ps)[flows].astype(float)
    ok = fct_ref > 0
    err = np.abs(fct_wh[ok] - fct_ref[ok]) / fct_ref[ok]
    # the flows that cross the fabric (NVLink flows are a fluid model, exact in both modes)
    fabric = (wh.flow_qp[flows] >= 0)[ok]
    err_net = err[fabric]
    it_ref, it_wh = ref.node_finish_ps.max(), wh.node_finish_ps.max()
    c = wh.counters
    pct = lambda x: round(100 * float(x), 4) if err.size else 0.0  # noqa: E731
    wall = float(c["sim_wall_s"])
    return {
        "wall_s": round(wall, 3),
        "speedup": round(float(ref.counters["sim_wall_s"]) / max(wall, 1e-9), 2),
        "events": int(c["events_processed"]),
        "events_skipped_pct": round(
            100 * (1 - c["events_processed"] / max(ref.counters["events_processed"], 1)), 2
        ),
        "bytes_skipped": int(c.get("bytes_skipped", 0)),
        "skips": int(c.get("skips", 0)),
        "skip_backs": int(c.get("skip_backs", 0)),
        "partitions_formed": int(c.get("partitions_formed", 0)),
        "memo_hits": int(c.get("memo_hits", 0)),
        "memo_misses": int(c.get("memo_misses", 0)),
        "memo_inserts": int(c.get("memo_inserts", 0)),
        "memo_rejected": int(c.get("memo_rejected", 0)),
        "parked": int(c.get("parked", 0)),
        "parked_released": int(c.get("parked_released", 0)),
        "shadows_remapped": int(c.get("shadows_remapped", 0)),
        "shadow_flows_mirrored": int(c.get("shadow_flows_mirrored", 0)),
        "fct_err_mean_pct": pct(err.mean()),
        "fct_err_p99_pct": pct(np.percentile(err, 99)) if err.size else 0.0,
        "fct_err_max_pct": pct(err.max()) if err.size else 0.0,
        "fct_err_mean_net_pct": pct(err_net.mean()) if err_net.size else 0.0,
        "fct_err_p99_net_pct": pct(np.percentile(err_net, 99)) if err_net.size else 0.0,
        "net_flows": int(fabric.sum()),
        "iter_err_pct": round(100 * abs(it_wh - it_ref) / it_ref, 4),
        "control_tunnelled": int(c.get("control_tunnelled", 0)),
        "peak_rss_gb": peak_rss_gb(),
    }


def run_wormhole_only(cfg, dag, cc: str, overrides: dict) -> dict:
    """One cold wormhole run without a packet reference (full-size rows at 1024 GPUs)."""
    import time

    from wormsim.memo import MemoStore
    from wormsim.netsim.packet.run import run_packet

    arrays, topo, net = _inputs(cfg, dag, cc)
    spec = cfg.sim.wormhole.model_copy(update=overrides)
    with tempfile.TemporaryDirectory() as tmp, MemoStore(Path(tmp) / "memo.sqlite") as store:
        t = time.perf_counter()
        last = [t]

        def progress(now_ps: int, nodes_done: int, _events: int = 0) -> None:  # a line a minute
            if time.perf_counter() - last[0] >= 60:
                last[0] = time.perf_counter()
                print(
                    f"  {workload_tag}: {now_ps / 1e9:.3f} ms simulated, {nodes_done:,} of "
                    f"{arrays.kind.size:,} nodes, {last[0] - t:.0f} s", file=sys.stderr,
                    flush=True,
                )  # fmt: skip

        workload_tag = cfg.name
        wh = run_packet(
            arrays, topo, net, routing=cfg.sim.routing, seed=cfg.sim.seed, wormhole=spec,
            memo_store=store, progress=progress,
        )  # fmt: skip
        total = time.perf_counter() - t
    c = wh.counters
    return {
        "cc": cc,
        "flows": int(arrays.kind.size),
        "wormhole_wall_s": round(float(c["sim_wall_s"]), 1),
        "run_wall_s": round(total, 1),
        "events": int(c["events_processed"]),
        "iteration_s": wh.node_finish_ps.max() / 1e12,
        "partitions_formed": int(c.get("partitions_formed", 0)),
        "memo_hits": int(c.get("memo_hits", 0)),
        "memo_misses": int(c.get("memo_misses", 0)),
        "skips": int(c.get("skips", 0)),
        "bridge_wall_s": round(float(c.get("memo_wall_s", 0.0)), 1),
        "peak_rss_gb": peak_rss_gb(),
    }


def run_wormhole(
    cfg, dag, cc: str, ref, wormhole_overrides: dict | None = None, warm: bool = True
) -> dict:
    """Wormhole on an empty memo store ("cold"), then again on the store it filled ("warm": the
    same experiment rerun, or a sweep over what the memo namespace leaves out), each against
    the packet run ``ref``."""
    from wormsim.collective.dag import KIND_FLOW
    from wormsim.memo import MemoStore

    arrays, topo, net = _inputs(cfg, dag, cc)
    spec = cfg.sim.wormhole.model_copy(update=wormhole_overrides or {})
    rec = {
        "cc": cc,
        "flows": int((arrays.kind == KIND_FLOW).sum()),
        "packet_wall_s": round(float(ref.counters["sim_wall_s"]), 3),
        "events_packet": int(ref.counters["events_processed"]),
        "iteration_s": ref.node_finish_ps.max() / 1e12,
        "reference": ref.counters.get("reference", "same process"),
    }
    with tempfile.TemporaryDirectory() as tmp, MemoStore(Path(tmp) / "memo.sqlite") as store:
        cold = _wormhole_once(cfg, arrays, topo, net, spec, store, ref)
        rec["wormhole_wall_s"] = cold.pop("wall_s")
        rec.update(cold)
        if warm:
            again = _wormhole_once(cfg, arrays, topo, net, spec, store, ref)
            for key in (
                "speedup",
                "events_skipped_pct",
                "memo_hits",
                "fct_err_mean_pct",
                "fct_err_mean_net_pct",
            ):
                rec[f"{key}_warm"] = again[key]
            rec["fct_err_p99_pct_warm"] = again["fct_err_p99_pct"]
            rec["iter_err_pct_warm"] = again["iter_err_pct"]
    return rec


def _rows(args, meta: dict, run_one) -> list[dict]:
    """One row per (workload, cc, partition rule); ``run_one`` None = against a packet run made
    once per (workload, cc) and shared by its rows."""
    records = []
    for workload in args.workloads:
        cfg, dag = scaled_dag(workload, args.scale)
        for cc in args.ccs:
            ref = None
            if run_one is None:
                ref = run_reference(cfg, dag, cc, args.ref_cache, f"{workload}-x{args.scale}")
            for ports in args.partition_ports:
                over = {"partition_ports": ports, "partial_replay": args.partial_replay}
                over.update(args.wh)
                if run_one is None:
                    figures = run_wormhole(cfg, dag, cc, ref, over, warm=not args.no_warm)
                else:
                    figures = run_one(cfg, dag, cc, over)
                rec = {**meta, "workload": workload, "partition_ports": ports, **figures}
                rec["partial_replay"] = args.partial_replay
                rec["overrides"] = ",".join(f"{k}={v}" for k, v in args.wh.items()) or "-"
                print(json.dumps(rec), flush=True)
                records.append(rec)
    return records


def _override(text: str) -> tuple[str, object]:
    """``key=value`` with the value read as YAML (``false``, ``0.05``, ``data``)."""
    import yaml

    key, _, value = text.partition("=")
    return key, yaml.safe_load(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--workloads", nargs="*", default=WORKLOADS)
    parser.add_argument("--ccs", nargs="*", default=CCS)
    parser.add_argument("--sensitivity", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument(
        "--partition-ports", nargs="*", default=["auto"], choices=["auto", "data_and_ack", "data"]
    )
    parser.add_argument("--partial-replay", action="store_true")
    parser.add_argument("--wormhole-only", action="store_true")
    parser.add_argument("--no-warm", action="store_true", help="skip the warm-store reruns")
    parser.add_argument(
        "--ref-cache", type=Path, default=None,
        help="folder to keep packet references in and reuse them from (see run_reference)",
    )  # fmt: skip
    parser.add_argument(
        "--wh", nargs="*", default=[], metavar="KEY=VALUE",
        help="WormholeSpec overrides for every wormhole run (e.g. share_transients=false)",
    )  # fmt: skip
    args = parser.parse_args()
    args.wh = dict(_override(x) for x in args.wh)
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "scale": args.scale,
    }
    records = []
    if args.sensitivity:
        cfg, dag = scaled_dag(args.workloads[0], args.scale)
        ref = run_reference(cfg, dag, args.ccs[0])
        for theta in (0.02, 0.05, 0.1):
            for window in (10, 15, 20, 40, 80):
                rec = {
                    **meta,
                    "workload": args.workloads[0],
                    "theta": theta,
                    "window": window,
                    **run_wormhole(
                        cfg, dag, args.ccs[0], ref, {"theta": theta, "window": window}, warm=False
                    ),
                }
                print(json.dumps(rec), flush=True)
                records.append(rec)
        name, title = "wormhole_sensitivity", "Wormhole sensitivity to theta and window"
        cols = [
            *_KEY_COLS,
            "theta",
            "window",
            "speedup",
            "events_skipped_pct",
            "memo_hits",
            "fct_err_mean_pct",
            "fct_err_p99_pct",
            "fct_err_max_pct",
            "iter_err_pct",
        ]
    elif args.wormhole_only:
        records = _rows(args, meta, run_wormhole_only)
        name, title = "wormhole_scale", "Wormhole alone at full size (no packet reference)"
        cols = [
            *_KEY_COLS,
            "partition_ports",
            "partial_replay",
            "flows",
            "wormhole_wall_s",
            "events",
            "partitions_formed",
            "memo_hits",
            "memo_misses",
            "skips",
            "iteration_s",
            "bridge_wall_s",
            "peak_rss_gb",
        ]
    else:
        records = _rows(args, meta, None)
        name, title = "wormhole", "Wormhole against packet mode, Table 1 workloads"
        cols = [
            *_KEY_COLS,
            "partition_ports",
            "partial_replay",
            "overrides",
            "flows",
            "packet_wall_s",
            "wormhole_wall_s",
            "speedup",
            "events_skipped_pct",
            "skips",
            "skip_backs",
            "memo_hits",
            "memo_misses",
            "fct_err_mean_pct",
            "fct_err_p99_pct",
            "fct_err_max_pct",
            "fct_err_mean_net_pct",
            "fct_err_p99_net_pct",
            "iter_err_pct",
            "speedup_warm",
            "events_skipped_pct_warm",
            "memo_hits_warm",
            "fct_err_mean_pct_warm",
            "iter_err_pct_warm",
            "peak_rss_gb",
            "reference",
        ]
    if args.no_record:
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    jsonl = RESULTS / f"{name}.jsonl"
    with open(jsonl, "a") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    intro = (
        "`python bench/wormhole.py` (see its docstring); wormhole is measured against packet "
        "mode on the same DAG in the same process."
    )
    write_md(jsonl, RESULTS / f"{name}.md", title, intro, cols)


if __name__ == "__main__":
    main()
