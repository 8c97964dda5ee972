"""Benchmark: Wormhole with its defaults on experiments that differ from the paper's Table 1.

The paper evaluated rail-optimized fat-trees with rail-aligned traffic only. Users ask about other
layouts (TP/PP/DP), Clos and fat-tree fabrics with ECMP, oversubscribed leaves, every congestion
control, GPT and MoE. Each experiment below is a Table 1 or bundled experiment file with a few
``--set`` overrides; every one runs in packet mode and in Wormhole mode with the library's
default Wormhole settings (no ``sim.wormhole`` section) on a cold memo store, on the same DAG.

Each (experiment, mode) runs in its own process, so the peak resident memory is that run's. A
row records: events of both modes and their ratio, wall times and their ratio, the mean of the
per-flow FCT errors (all flows, and fabric flows only), the iteration-time error, Wormhole's
counters (skips, partitions, memo hits and misses, shadows) and both peak memories, with the
commit and the machine. ``--scale`` multiplies every flow's bytes and every compute duration
(1.0 = full size; the default 0.1 keeps the iteration's shape at a tenth of the packets, so a
whole suite runs in well under an hour on two cores).

Each row also carries packet mode's own *noise floor* (``floor_*`` columns): the same errors
between the packet run and a packet run in which every compute node that starts a flow lasts up
to 1 ns longer (seeded; :func:`perturb`).
Where the fabric and the congestion control are chaotic (TIMELY on oversubscribed fabrics) that
nanosecond alone moves flows by tens of per cent and the iteration by per cents, so a Wormhole
error is read against the floor: below it, no simulator can claim to be closer to "the" packet
run than packet mode is to itself. ``--no-floor`` leaves the third run out.

Usage::

    python bench/generalization.py                          # every experiment at 0.1 size
    python bench/generalization.py --only gpt7b-64-tp4dp8 --scale 1.0 --ref-cache ~/.cache/ws-ref
    python bench/generalization.py --list
    python bench/generalization.py --only gpt13b-128-clos --wh skip_unit=flow window=5

``--wh KEY=VALUE ...`` runs Wormhole with those ``sim.wormhole`` settings instead of the
defaults (recorded in the row's ``wormhole_settings``); the figures the project quotes are the
defaults'.

Appends to ``bench/results/generalization.jsonl`` and rewrites ``generalization.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import yaml
from _provenance import git_commit, machine
from _records import write_md

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
T1 = ROOT / "examples" / "table1"


class Experiment(NamedTuple):
    """One suite entry: an experiment file and the ``--set`` overrides that make it new."""

    name: str
    path: Path
    overrides: tuple[str, ...]
    why: str


_CLOS16 = ("cluster.topology=clos", "cluster.hosts_per_leaf=16")
_FT = ("cluster.topology=fat_tree",)

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment(
        "gpt7b-64-tp4dp8",
        T1 / "gpt7b-64.yaml",
        ("parallel.tp=4", "parallel.dp=8", "parallel.global_batch=16"),
        "layout: DP rings cross rails (every inter-server hop through a spine)",
    ),
    Experiment(
        "gpt7b-64-tp4pp4",
        T1 / "gpt7b-64.yaml",
        ("parallel.tp=4", "parallel.pp=4", "parallel.dp=4", "parallel.global_batch=16"),
        "layout: TP4 PP4 DP4, deeper pipeline, cross-rail DP",
    ),
    Experiment(
        "gpt7b-64-clos-dcqcn",
        T1 / "gpt7b-64.yaml",
        (*_CLOS16, "network.cc=dcqcn"),
        "fabric: leaf-spine Clos with ECMP, DCQCN",
    ),
    Experiment(
        "gpt7b-64-fattree-dctcp",
        T1 / "gpt7b-64.yaml",
        (*_FT, "network.cc=dctcp"),
        "fabric: 3-tier k-ary fat-tree with ECMP, DCTCP",
    ),
    Experiment(
        "gpt7b-64-rail-2to1-timely",
        T1 / "gpt7b-64.yaml",
        (
            "cluster.oversubscription=2",
            "network.cc=timely",
            "parallel.tp=4",
            "parallel.dp=8",
            "parallel.global_batch=16",
        ),
        "oversubscribed 2:1 rail fabric, cross-rail DP, TIMELY",
    ),  # fmt: skip
    Experiment(
        "gpt13b-128-clos",
        T1 / "gpt13b-128.yaml",
        _CLOS16,
        "fabric: Clos 1:1 (the DSE example's base point), HPCC",
    ),
    Experiment(
        "gpt13b-128-clos-2to1-dcqcn",
        T1 / "gpt13b-128.yaml",
        (*_CLOS16, "cluster.oversubscription=2", "network.cc=dcqcn"),
        "fabric: Clos 2:1, DCQCN (a point of examples/dse/cc_oversubscription.yaml)",
    ),
    Experiment(
        "gpt13b-128-clos-4to1-timely",
        T1 / "gpt13b-128.yaml",
        (*_CLOS16, "cluster.oversubscription=4", "network.cc=timely"),
        "fabric: Clos 4:1, TIMELY",
    ),
    Experiment(
        "moe8x7b-64-clos",
        T1 / "moe8x7b-64.yaml",
        _CLOS16,
        "MoE all-to-all on a Clos, HPCC",
    ),
    Experiment(
        "moe8x7b-64-dctcp",
        T1 / "moe8x7b-64.yaml",
        ("network.cc=dctcp",),
        "MoE on the rail fabric, DCTCP",
    ),
    Experiment(
        "gpt350m-32-clos-2to1",
        ROOT / "examples" / "default.yaml",
        (*_CLOS16, "cluster.oversubscription=2", "parallel.dp=2"),
        "the bundled default experiment on a 2:1 Clos",
    ),
    Experiment(
        "gpt22b-256-clos",
        T1 / "gpt22b-256.yaml",
        _CLOS16,
        "256 GPUs on a Clos, HPCC",
    ),
)
_BY_NAME = {e.name: e for e in EXPERIMENTS}


def build_inputs(exp: Experiment, scale: float, wormhole: dict | None = None):
    """The experiment's config (``sim.wormhole`` reset to the library defaults, plus the
    ``wormhole`` settings given), DAG arrays and topology, with flow bytes and compute durations
    multiplied by ``scale``."""
    from wormsim.collective.dag import dag_to_arrays, scale_dag
    from wormsim.collective.expand import expand_dag
    from wormsim.experiment import load_experiment
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.netsim.wormhole.spec import WormholeSpec
    from wormsim.workload.builder import build_ops

    cfg = load_experiment(exp.path, list(exp.overrides))
    spec = WormholeSpec(**(wormhole or {}))
    cfg = cfg.model_copy(update={"sim": cfg.sim.model_copy(update={"wormhole": spec})})
    ops = build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)
    dag = expand_dag(ops, (cfg.cluster.gpus_per_node, cfg.cluster.gpus), cfg.collective)
    dag = scale_dag(dag, scale)
    return cfg, dag, dag_to_arrays(dag), build_topology(cfg.cluster)


PERTURB_PS = 1000
"""The perturbation of the noise-floor run: up to 1 ns more on each compute node that starts
a flow."""


def perturb(arrays, seed: int = 1) -> int:
    """Make every compute node with a flow among its children up to :data:`PERTURB_PS` longer
    (uniform, seeded), in place; return how many nodes were perturbed.

    Why there and not on one node: a single nanosecond on the first compute node of a rank is
    absorbed at the rank's next wait and moves no flow (measured on the bundled default
    experiment on a 2:1 Clos: 0.005 % mean fabric-flow FCT), while one nanosecond on the
    compute node before a data-parallel all-reduce moves its flows by 5.3-5.7 %.
    """
    from wormsim.collective.dag import KIND_FLOW

    flow = arrays.kind == KIND_FLOW
    starts_flow = np.zeros(flow.size, dtype=bool)
    for v in np.nonzero(~flow & (arrays.duration_ps > 0))[0]:
        children = arrays.child_index[arrays.child_offsets[v] : arrays.child_offsets[v + 1]]
        starts_flow[v] = flow[children].any()
    (nodes,) = np.nonzero(starts_flow)
    rng = np.random.default_rng(seed)
    arrays.duration_ps[nodes] += rng.integers(0, PERTURB_PS + 1, nodes.size)
    return int(nodes.size)


def _peak_rss_gb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 3)


def worker(name: str, mode: str, scale: float, out: Path, wormhole: dict | None = None) -> None:
    """Run one experiment in one mode in this process; write times and counters to ``out``."""
    from wormsim.memo import MemoStore
    from wormsim.netsim.packet.run import run_packet

    cfg, _, arrays, topo = build_inputs(_BY_NAME[name], scale, wormhole)
    kw = dict(routing=cfg.sim.routing, seed=cfg.sim.seed)
    if mode == "perturbed":
        perturb(arrays)
    if mode in ("packet", "perturbed"):
        res = run_packet(arrays, topo, cfg.network, **kw)
    else:
        with tempfile.TemporaryDirectory() as tmp, MemoStore(Path(tmp) / "m.sqlite") as store:
            res = run_packet(
                arrays, topo, cfg.network, wormhole=cfg.sim.wormhole, memo_store=store, **kw
            )
    from wormsim.collective.dag import KIND_FLOW

    c = {k: v for k, v in res.counters.items() if isinstance(v, int | float)}
    flow = arrays.kind == KIND_FLOW
    np.savez(
        out, start=res.node_start_ps, finish=res.node_finish_ps, flow=flow,
        fabric=flow & (res.flow_qp >= 0),
        counters=json.dumps(c), peak_rss_gb=_peak_rss_gb(),
    )  # fmt: skip


def _run(name: str, mode: str, scale: float, path: Path, wormhole: dict | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", name, mode, str(scale), str(path)]
    cmd += [json.dumps(wormhole or {})]
    subprocess.run(cmd, check=True)
    z = np.load(path, allow_pickle=False)
    return {
        "start": z["start"], "finish": z["finish"], "flow": z["flow"], "fabric": z["fabric"],
        "counters": json.loads(str(z["counters"])), "peak_rss_gb": float(z["peak_rss_gb"]),
    }  # fmt: skip


def _reference(exp: Experiment, scale: float, cache: Path | None, tmp: Path) -> dict:
    """The packet run, from ``cache`` when the same DAG, network and engine made one before."""
    from importlib.metadata import version

    from wormsim.netsim.wormhole.namespace import PACKET_MODEL

    cfg, dag, _, _ = build_inputs(exp, scale)
    key = hashlib.sha256(
        dag.hash_rows().to_numpy().tobytes() + cfg.network.model_dump_json().encode()
        + cfg.cluster.model_dump_json().encode() + version("wormsim").encode()
        + str(PACKET_MODEL).encode()
    ).hexdigest()[:16]  # fmt: skip
    if cache is not None:
        path = cache / f"{exp.name}-x{scale}-{key}.npz"
        if path.exists():
            ref = _run_cached(path)
            ref["counters"]["reference"] = f"cached {path.name}"
            return ref
        cache.mkdir(parents=True, exist_ok=True)
    else:
        path = tmp / "packet.npz"
    ref = _run(exp.name, "packet", scale, path)
    ref["counters"]["reference"] = "same run"
    return ref


def _run_cached(path: Path) -> dict:
    z = np.load(path, allow_pickle=False)
    return {
        "start": z["start"], "finish": z["finish"], "flow": z["flow"], "fabric": z["fabric"],
        "counters": json.loads(str(z["counters"])), "peak_rss_gb": float(z["peak_rss_gb"]),
    }  # fmt: skip


def _pct(x: float) -> float:
    return round(100 * float(x), 4)


def errors(ref: dict, other: dict) -> dict:
    """Per-flow FCT and iteration-time errors (percent) of ``other`` against ``ref``."""
    a = (ref["finish"] - ref["start"]).astype(float)
    b = (other["finish"] - other["start"]).astype(float)
    ok = ref["flow"] & (a > 0)
    signed = (b[ok] - a[ok]) / a[ok]
    err = np.abs(signed)
    net = ref["fabric"][ok]
    it_a, it_b = float(ref["finish"].max()), float(other["finish"].max())
    return {
        "fct_err_mean_pct": _pct(err.mean()) if err.size else 0.0,
        "fct_err_mean_fabric_pct": _pct(err[net].mean()) if net.any() else 0.0,
        # a bias (every skip fast or slow) moves the median; chaos moves flows both ways
        "fct_signed_median_fabric_pct": _pct(np.median(signed[net])) if net.any() else 0.0,
        "fct_err_max_pct": _pct(err.max()) if err.size else 0.0,
        "iter_err_pct": _pct(abs(it_b - it_a) / it_a),
        "iteration_ms": round(it_a / 1e9, 4),
        "flows": int(ok.sum()),
        "fabric_flows": int(net.sum()),
    }


def compare(ref: dict, wh: dict, floor: dict | None = None) -> dict:
    """Wormhole's figures against the packet run: ratios and errors (percent), and packet
    mode's noise floor (the perturbed packet run's errors) when ``floor`` is given."""
    rc, wc = ref["counters"], wh["counters"]
    noise = {}
    if floor is not None:
        e = errors(ref, floor)
        noise = {f"floor_{k}": e[k] for k in ("fct_err_mean_fabric_pct", "iter_err_pct")}
    return {
        "events_packet": int(rc["events_processed"]),
        "events_wormhole": int(wc["events_processed"]),
        "events_ratio": round(rc["events_processed"] / max(wc["events_processed"], 1), 2),
        "packet_wall_s": round(rc["sim_wall_s"], 2),
        "wormhole_wall_s": round(wc["sim_wall_s"], 2),
        "wall_ratio": round(rc["sim_wall_s"] / max(wc["sim_wall_s"], 1e-9), 2),
        **errors(ref, wh),
        **noise,
        **{
            k: int(wc.get(k, 0))
            for k in (
                "skips",
                "skip_backs",
                "partitions_formed",
                "memo_hits",
                "memo_misses",
                "memo_inserts",
                "parked",
                "shadow_flows_mirrored",
                "bytes_skipped",
            )
        },  # fmt: skip
        "memo_wall_s": round(float(wc.get("memo_wall_s", 0.0)), 2),
        "packet_peak_rss_gb": ref["peak_rss_gb"],
        "wormhole_peak_rss_gb": wh["peak_rss_gb"],
        "reference": rc.get("reference", ""),
    }


_COLS = [
    "date", "commit", "scale", "experiment", "wormhole_settings", "events_ratio", "wall_ratio",
    "fct_err_mean_pct",
    "fct_err_mean_fabric_pct", "fct_signed_median_fabric_pct", "iter_err_pct",
    "floor_fct_err_mean_fabric_pct",
    "floor_iter_err_pct", "skips", "partitions_formed", "memo_hits",
    "memo_misses", "parked", "packet_wall_s", "wormhole_wall_s", "wormhole_peak_rss_gb",
]  # fmt: skip


_INTRO = (
    "`python bench/generalization.py` (see its docstring): packet and Wormhole mode (library "
    "defaults, cold store) on the same DAG, each in its own process. Targets of the suite: "
    "events ratio >= 50, wall ratio >= 30, mean per-flow FCT error < 1 %, iteration error < 0.5 %. "
    "`floor_*`: the same errors of a packet run whose compute nodes that start flows last up "
    "to 1 ns longer (packet mode against itself; empty before 2026-12-04; rows before "
    "2026-12-04T21:30 perturbed only rank 0's first compute node, which most runs absorb at "
    "the next wait)."
)


def chosen(parser: argparse.ArgumentParser, only: list[str] | None) -> list[str]:
    """The experiment names ``--only`` picks (all when unset); unknown ones stop ``parser``."""
    unknown = sorted(set(only or []) - set(_BY_NAME))
    if unknown:
        parser.error(f"unknown experiments {unknown}; see --list")
    return list(only) if only else [e.name for e in EXPERIMENTS]


def run_meta(scale: float) -> dict:
    """What every row of a suite run starts with: date, commit, machine and scale."""
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "scale": scale,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        name, mode, scale, out, wormhole = sys.argv[2:7]
        worker(name, mode, float(scale), Path(out), json.loads(wormhole))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--only", nargs="*", default=None, help="experiment names")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument(
        "--no-floor", action="store_true", help="skip the perturbed packet run (noise floor)"
    )
    parser.add_argument(
        "--ref-cache", type=Path, default=None, help="folder to keep packet runs in and reuse"
    )
    parser.add_argument(
        "--wh",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="sim.wormhole settings instead of the defaults (recorded in the row)",
    )
    args = parser.parse_args()
    wormhole = {}
    for kv in args.wh:
        key, _, value = kv.partition("=")
        wormhole[key] = yaml.safe_load(value)
    if args.list:
        for e in EXPERIMENTS:
            print(f"{e.name:30s} {e.path.relative_to(ROOT)} {' '.join(e.overrides)}  # {e.why}")
        return
    picked = set(chosen(parser, args.only))
    experiments = [e for e in EXPERIMENTS if e.name in picked]
    meta = run_meta(args.scale)
    RESULTS.mkdir(parents=True, exist_ok=True)
    jsonl = RESULTS / "generalization.jsonl"
    for exp in experiments:
        with tempfile.TemporaryDirectory() as tmp:
            ref = _reference(exp, args.scale, args.ref_cache, Path(tmp))
            wh = _run(exp.name, "wormhole", args.scale, Path(tmp) / "wormhole.npz", wormhole)
            floor = None
            if not args.no_floor:
                floor = _run(exp.name, "perturbed", args.scale, Path(tmp) / "perturbed.npz")
        row = {**meta, "experiment": exp.name, "overrides": " ".join(exp.overrides)}
        row["wormhole_settings"] = " ".join(args.wh) or "defaults"
        row.update(compare(ref, wh, floor))
        print(json.dumps(row), flush=True)
        if not args.no_record:
            with open(jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            write_md(
                jsonl, RESULTS / "generalization.md",
                "Wormhole defaults on experiments unlike Table 1", _INTRO, _COLS,
            )  # fmt: skip


if __name__ == "__main__":
    main()
