"""Benchmark: build the flow DAG of a GPT-175B iteration on 1024 GPUs (t=8, p=16, d=8, m=192).

The ops table is synthetic but has the real shape: per micro-batch and layer 2 forward and 2
backward TP all-reduces of M = b*s*h*2 bytes over the 8 GPUs of a server (~590 k instances), PP
send/recv of M between stages, and DP gradient all-reduces (80 MB buckets) over 8 ranks on 8
servers; compute ops in between, each op depending on the previous op of its rank. The lead will
later point this at the real workload builder.

Usage::

    python bench/dag_build.py [--microbatches 192] [--no-record]

Appends a record to ``bench/results/dag_build.jsonl`` and ``bench/results/dag_build.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import time
from pathlib import Path

import numpy as np
import polars as pl

from wormsim.collective import ClusterLayout, CollectiveSpec, collective_summary, expand_dag
from wormsim.workload.ops import OPS_SCHEMA

RESULTS = Path(__file__).parent / "results"

# op type codes of the synthetic schedule
COMPUTE, TP_AR, SEND_F, RECV_F, SEND_B, RECV_B, DP_AR = range(7)


def synthetic_ops(
    t: int = 8,
    p: int = 16,
    d: int = 8,
    m: int = 192,
    layers: int = 96,
    hidden: int = 12288,
    seq: int = 2048,
    dp_buckets: int = 34,
    bucket_bytes: int = 80_000_000,
) -> pl.DataFrame:
    """A GPT-shaped ops table (rank = (d_i * p + p_i) * t + t_i; TP inside a server)."""
    msg = seq * hidden * 2
    lps = layers // p
    world = t * p * d
    n_ar = m * lps * 4  # TP all-reduces per rank
    cols: dict[str, list[np.ndarray]] = {k: [] for k in OPS_SCHEMA if k not in ("split_bytes",)}
    next_op = 0
    base_dp = d * p * n_ar
    base_p2p = base_dp + t * p * dp_buckets
    per_stage = []
    for s in range(p):
        typ, mb, layer, phase, idx = [], [], [], [], []
        ar = 0
        for mi in range(m):
            for ph, first, last in (("fwd", RECV_F, SEND_F), ("bwd", RECV_B, SEND_B)):
                has_first = s > 0 if ph == "fwd" else s < p - 1
                has_last = s < p - 1 if ph == "fwd" else s > 0
                if has_first:
                    typ.append(first), mb.append(mi), layer.append(-1), phase.append(ph)
                    idx.append(0)
                for li in range(lps):
                    lay = s * lps + (li if ph == "fwd" else lps - 1 - li)
                    for _ in range(2):
                        typ += [COMPUTE, TP_AR]
                        mb += [mi, mi]
                        layer += [lay, lay]
                        phase += [ph, ph]
                        idx += [0, ar]
                        ar += 1
                if has_last:
                    typ.append(last), mb.append(mi), layer.append(-1), phase.append(ph)
                    idx.append(0)
        for bi in range(dp_buckets):
            typ.append(DP_AR), mb.append(-1), layer.append(-1), phase.append("step")
            idx.append(bi)
        per_stage.append(
            (np.array(typ), np.array(mb), np.array(layer), np.array(phase), np.array(idx))
        )
    for r in range(world):
        ti, pi, di = r % t, (r // t) % p, r // (t * p)
        typ, mb, layer, phase, idx = per_stage[pi]
        k = typ.shape[0]
        op_id = np.arange(next_op, next_op + k, dtype=np.int64)
        next_op += k
        comm = typ != COMPUTE
        coll_id = np.full(k, -1, dtype=np.int64)
        tp_group = r // t
        coll_id[typ == TP_AR] = tp_group * n_ar + idx[typ == TP_AR]
        coll_id[typ == DP_AR] = base_dp + (r % (t * p)) * dp_buckets + idx[typ == DP_AR]

        def p2p_key(
            stage: int, mbs: np.ndarray, direction: int, di: int = di, ti: int = ti
        ) -> np.ndarray:
            return base_p2p + (((di * p + stage) * t + ti) * m + mbs) * 2 + direction

        peer = np.full(k, -1, dtype=np.int32)
        for code, stage, direction, dst_stage in (
            (SEND_F, pi, 0, pi + 1),
            (RECV_F, pi - 1, 0, pi - 1),
            (SEND_B, pi, 1, pi - 1),
            (RECV_B, pi + 1, 1, pi + 1),
        ):
            sel = typ == code
            coll_id[sel] = p2p_key(stage, mb[sel], direction)
            peer[sel] = (di * p + dst_stage) * t + ti
        coll = np.array(["", "allreduce", "send", "recv", "send", "recv", "allreduce"])[typ]
        group = np.array(["", "tp", "pp", "pp", "pp", "pp", "dp"])[typ]
        size = np.where(typ == DP_AR, bucket_bytes, np.where(comm, msg, 0))
        cols["op_id"].append(op_id)
        cols["rank"].append(np.full(k, r, dtype=np.int32))
        cols["seq"].append(np.arange(k, dtype=np.int32))
        cols["kind"].append(np.where(comm, "comm", "compute"))
        cols["name"].append(np.array(["gemm", "tp_ar", "pp", "pp", "pp", "pp", "dp_grad"])[typ])
        cols["phase"].append(phase)
        cols["stage"].append(np.full(k, pi, dtype=np.int32))
        cols["chunk"].append(np.zeros(k, dtype=np.int32))
        cols["layer"].append(layer.astype(np.int32))
        cols["microbatch"].append(mb.astype(np.int32))
        cols["duration_ps"].append(np.where(comm, 0, 500_000_000))
        cols["flops"].append(np.zeros(k))
        cols["collective"].append(coll)
        cols["group"].append(group)
        cols["coll_id"].append(coll_id)
        cols["peer"].append(peer)
        cols["size_bytes"].append(size.astype(np.int64))
        cols["deps"].append(op_id - 1)
    data = {c: np.concatenate(v) for c, v in cols.items()}
    first = np.concatenate([[True], data["rank"][1:] != data["rank"][:-1]])
    prev = data.pop("deps")
    frame = pl.DataFrame(data)
    deps = pl.Series("deps", prev).cast(pl.Int64).to_frame()
    deps = deps.select(
        pl.when(pl.Series(first))
        .then(pl.lit([], dtype=pl.List(pl.Int64)))
        .otherwise(pl.concat_list(pl.col("deps")))
        .alias("deps")
    )
    frame = frame.with_columns(deps["deps"], split_bytes=pl.lit(None, dtype=pl.List(pl.Int64)))
    return frame.select([pl.col(c).cast(dt_) for c, dt_ in OPS_SCHEMA.items()])


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _commit() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "wormsim/collective"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "uncommitted"
    return "uncommitted" if dirty or not head else head


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--microbatches", type=int, default=192)
    ap.add_argument("--granularity", default="step", choices=["step", "nccl_chunks"])
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    ops = synthetic_ops(m=args.microbatches)
    t_ops = time.perf_counter() - t0
    rss_ops = _peak_rss_mb()
    spec = CollectiveSpec(granularity=args.granularity)
    t0 = time.perf_counter()
    dag = expand_dag(ops, ClusterLayout(gpus_per_node=8, num_gpus=1024), spec)
    wall = time.perf_counter() - t0
    rss = _peak_rss_mb()
    summ = collective_summary(dag, 8, ops)
    kinds = dict(dag.group_by("kind").len().iter_rows())
    edges = int(dag["deps"].list.len().sum())
    tp = summ.filter(pl.col("group") == "tp")
    rec = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpu "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB",
        "python": platform.python_version(),
        "polars": pl.__version__,
        "numpy": np.__version__,
        "scenario": f"gpt175b t8 p16 d8 m{args.microbatches} 1024 gpus, {args.granularity}",
        "op_rows": ops.height,
        "tp_allreduce_instances": int(tp["instances"].sum()),
        "nodes": dag.height,
        "flows": int(kinds.get("flow", 0)),
        "edges": edges,
        "ops_build_s": round(t_ops, 2),
        "expand_s": round(wall, 2),
        "peak_rss_mb_after_ops": round(rss_ops),
        "peak_rss_mb": round(rss),
    }
    print(json.dumps(rec, indent=2))
    with pl.Config(tbl_rows=20, tbl_cols=10, tbl_width_chars=140):
        print(summ)
    if args.no_record:
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / "dag_build.jsonl", "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    md = RESULTS / "dag_build.md"
    if not md.exists():
        md.write_text(
            "# dag_build benchmark\n\n`python bench/dag_build.py`: `expand_dag` on a synthetic "
            "GPT-175B iteration (1024 GPUs, t8 p16 d8).\n\n"
            "| date | commit | machine | scenario | op rows | TP AR inst. | nodes | flows | "
            "edges | expand s | peak RSS MB |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
    with open(md, "a") as fh:
        fh.write(
            f"| {rec['date']} | {rec['commit']} | {rec['machine']} | {rec['scenario']} | "
            f"{rec['op_rows']:,} | {rec['tp_allreduce_instances']:,} | {rec['nodes']:,} | "
            f"{rec['flows']:,} | {rec['edges']:,} | {rec['expand_s']} | {rec['peak_rss_mb']:,} |\n"
        )


if __name__ == "__main__":
    main()
