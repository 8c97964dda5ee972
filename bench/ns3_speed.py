"""Speed side by side with HPCC ns-3: the k=8 fat-tree permutation (128 flows x 10 MB, HPCC).

Both simulators run the same HPCC-format files (``topology.txt`` from
:func:`engine.fattree_topology_txt`, the seed-1 derangement of
``bench/wormhole_permutation.py``, all flows at t = 2 s, and the corpus's HPCC ``config.txt``,
``tests/data/ns3/dumbbell8/hp/config.txt``) as whole processes: ns-3's ``third config.txt`` and
``wormsim netsim run --topology ... --flows ... --config ...`` (interpreter start, imports, numba
cache load, setup, simulation, writing ``fct.txt``). The two alternate, pair after pair (the
first of a pair alternates too), each pinned to the same core (``--cpu``); wall time from the
parent, CPU time (user + system) from ``wait4``. Both outputs are checked against each other
(HPCC: the same FCTs to the nanosecond).

Also measured: the first compile of the packet kernels on an empty numba cache
(``NUMBA_CACHE_DIR`` a fresh directory, one core), apart from the runs; and where our time goes:
the phases of each run (``summary.json``: kernel, setup, numba cache load; the rest is the
interpreter, imports and output) and the mix of event types (the kernel stepped one event at a
time, its heap top read before each; ``--mix-events`` to stop early).

Run: ``python bench/ns3_speed.py --ns3 /path/to/High-Precision-Congestion-Control/simulation
[--reps 3] [--cpu 0]``. ns-3 is an optimized build (``waf configure --build-profile=optimized``);
its event count is read from a ``events N`` line on stderr if the build prints one (a local
counter in ``DefaultSimulatorImpl::Run``, as the corpus's README describes), else left out.
Appends to ``bench/results/ns3_speed.jsonl`` and rewrites ``ns3_speed.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _provenance import git_commit, machine
from engine import _derangement, fattree_topology_txt

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results"
CONFIG = ROOT / "tests" / "data" / "ns3" / "dumbbell8" / "hp" / "config.txt"
K = 8
SIZE = 10_000_000


def write_scenario(d: Path) -> None:
    """topology.txt, flow.txt, trace.txt and config.txt of the k=8 permutation in ``d``."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "topology.txt").write_text(fattree_topology_txt(K))
    n = K**3 // 4
    perm = _derangement(n, 1)
    lines = [str(n)] + [f"{i} {perm[i]} 3 100 {SIZE} 2.0" for i in range(n)]
    (d / "flow.txt").write_text("\n".join(lines) + "\n")
    (d / "trace.txt").write_text("0\n\n")
    shutil.copy(CONFIG, d / "config.txt")


def _timed(cmd: list[str], cwd: Path, env: dict, log: Path) -> dict:
    """Run ``cmd`` to completion: wall (s), CPU user/system (s), max RSS (MB), load before."""
    load = os.getloadavg()[0]
    with open(log, "w") as out, open(log.with_suffix(".err"), "w") as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} failed ({status}), see {log}")
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "user_s": round(ru.ru_utime, 3),
        "sys_s": round(ru.ru_stime, 3),
        "maxrss_mb": round(ru.ru_maxrss / 1024, 1),
        "load1_before": round(load, 2),
    }


def _pin(cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu)] if cpu is not None and shutil.which("taskset") else []


def run_ns3(sim: Path, d: Path, cpu: int | None) -> dict:
    env = dict(os.environ, LD_LIBRARY_PATH=str(sim / "build"))
    env.pop("NS_GLOBAL_VALUE", None)
    r = _timed([*_pin(cpu), str(sim / "build" / "scratch" / "third"), "config.txt"], d, env,
               d / "ns3.log")  # fmt: skip
    ev = [x for x in (d / "ns3.err").read_text().splitlines() if x.startswith("events ")]
    r["events"] = int(ev[-1].split()[1]) if ev else None
    return r


def run_ours(d: Path, out: Path, cpu: int | None, env: dict | None = None) -> dict:
    exe = Path(sys.executable).with_name("wormsim")
    cmd = [*_pin(cpu), str(exe), "netsim", "run", "--topology", "topology.txt", "--flows",
           "flow.txt", "--config", "config.txt", "-o", str(out), "--force"]  # fmt: skip
    r = _timed(cmd, d, env or dict(os.environ), out.with_name(out.name + ".log"))
    s = json.loads((out / "summary.json").read_text())
    r.update(
        events=int(s["events_processed"]),
        sim_s=round(s["sim_wall_s"], 3),
        build_s=round(s["build_s"], 3),
        cache_load_s=round(s["compile_s"], 3),
    )
    return r


def _fct(path: Path) -> dict[tuple[int, int, int], int]:
    out = {}
    for line in path.read_text().splitlines():
        sip, dip, sport, _, _, _, fct, _ = line.split()
        out[(int(sip, 16), int(dip, 16), int(sport))] = int(fct)
    return out


def compare_fct(ns3_fct: Path, ours_fct: Path) -> dict:
    a, b = _fct(ns3_fct), _fct(ours_fct)
    keys = sorted(a)
    err = [abs(b[k] - a[k]) / a[k] for k in keys if k in b]
    return {
        "flows": len(keys),
        "flows_ours": len(b),
        "flows_exact": sum(b.get(k) == a[k] for k in keys),
        "mean_fct_us_ns3": round(sum(a.values()) / len(a) / 1e3, 3),
        "mean_fct_us_ours": round(sum(b.values()) / len(b) / 1e3, 3),
        "max_flow_err_pct": round(100 * max(err), 4) if err else None,
    }


def first_compile(d: Path, cpu: int | None) -> dict:
    """The packet kernels compiled on an empty numba cache, one core: ``_warm`` alone (what it
    reports and the process), then a whole first ``wormsim netsim run`` on another empty cache."""
    code = (
        "import json, time; t = time.perf_counter(); "
        "from wormsim.netsim.packet.run import _warm; i = time.perf_counter() - t; "
        "c = _warm(); print(json.dumps({'import_s': i, 'warm_s': c}))"
    )
    out = {}
    with tempfile.TemporaryDirectory(prefix="numba_cache_") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        log = d / "compile.log"
        r = _timed([*_pin(cpu), sys.executable, "-c", code], d, env, log)
        w = json.loads(log.read_text().splitlines()[-1])
        out["compile_only"] = {
            **r,
            "warm_s": round(w["warm_s"], 2),
            "import_s": round(w["import_s"], 2),
        }
    with tempfile.TemporaryDirectory(prefix="numba_cache_") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out["first_run"] = run_ours(d, d / "ours_cold", cpu, env)
    return out


def event_mix(d: Path, n_events: int) -> dict:
    """Counts of event types over the first ``n_events`` events of our run (in process)."""
    import numpy as np

    from wormsim.netsim.formats.hpcc_config import read_hpcc_config
    from wormsim.netsim.formats.hpcc_io import flows_to_dag, read_flows, read_topology
    from wormsim.netsim.packet import state as st
    from wormsim.netsim.packet.engine import init_kernel, run_kernel
    from wormsim.netsim.packet.run import _warm, build_state

    topo = read_topology(d / "topology.txt")
    dag, _ = flows_to_dag(read_flows(d / "flow.txt", topo))
    net, _ = read_hpcc_config(d / "config.txt")
    _warm()
    A, P, _, _ = build_state(dag, topo, net, routing="ns3")
    S = st.make_state(A)
    init_kernel(S, P, 0)
    counts = np.zeros(len(st.EVENT_NAMES), np.int64)
    never = np.iinfo(np.int64).max
    for i in range(n_events or np.iinfo(np.int64).max):
        if A["cnt"][st.C_HEAPN] == 0:
            break
        counts[A["he"][0] & 0xFF] += 1
        status = run_kernel(S, P, never, 64, 66, i + 1)
        while status == st.RUN_NEEDS_ROOM:  # room first, as run_packet makes it (event to come)
            A = st.grow_pool(A) if A["cnt"][st.C_FREE] < 64 else st.grow_heap(A)
            S = st.make_state(A)
            status = run_kernel(S, P, never, 64, 66, i + 1)
        if status == st.RUN_FINISHED:
            break
    total = int(counts.sum())
    return {
        "events": total,
        "sim_time_us": round(int(A["cnt"][st.C_NOW]) / 1e6 - 2e6, 1),
        **{st.EVENT_NAMES[i]: int(c) for i, c in enumerate(counts) if c},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3", type=Path, required=True, help="HPCC ns-3's simulation/ directory")
    ap.add_argument("--reps", type=int, default=3, help="pairs of runs (median of each side)")
    ap.add_argument("--cpu", type=int, default=0, help="core both run on (-1: not pinned)")
    ap.add_argument("--mix-events", type=int, default=0, help="events stepped (0: the whole run)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    cpu = None if args.cpu < 0 else args.cpu
    sim = args.ns3.resolve()
    d = (args.workdir or Path(tempfile.mkdtemp(prefix="ns3_speed_"))).resolve()
    write_scenario(d)
    ns3_dir = d / "ns3"
    write_scenario(ns3_dir)
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "case": f"k={K} fat-tree permutation, {K**3 // 4} x {SIZE // 10**6} MB, HPCC",
        "ns3": "alibaba-edu/High-Precision-Congestion-Control 9f4be2a, optimized",
        "cpu": cpu,
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(meta), flush=True)
    compile_rec = first_compile(d, cpu)
    print("first compile:", json.dumps(compile_rec), flush=True)
    run_ours(d, d / "ours_warm", cpu)  # the numba cache of this checkout, warm
    ns3_runs, our_runs = [], []
    for i in range(args.reps):
        order = ("ns3", "ours") if i % 2 == 0 else ("ours", "ns3")
        for who in order:
            if who == "ns3":
                ns3_runs.append(run_ns3(sim, ns3_dir, cpu))
                print("ns-3:", json.dumps(ns3_runs[-1]), flush=True)
            else:
                our_runs.append(run_ours(d, d / "ours", cpu))
                print("ours:", json.dumps(our_runs[-1]), flush=True)
    check = compare_fct(ns3_dir / "fct.txt", d / "ours" / "fct.txt")
    print("FCT check:", json.dumps(check), flush=True)
    mix = event_mix(d, args.mix_events)
    print("event mix:", json.dumps(mix), flush=True)

    def med(runs, k):
        return round(statistics.median(r[k] for r in runs), 3)

    rec = {
        **meta,
        "reps": args.reps,
        "ns3_wall_s": med(ns3_runs, "wall_s"),
        "ns3_cpu_s": med(ns3_runs, "cpu_s"),
        "ours_wall_s": med(our_runs, "wall_s"),
        "ours_cpu_s": med(our_runs, "cpu_s"),
        "ours_sim_s": med(our_runs, "sim_s"),
        "wall_ratio": round(med(ns3_runs, "wall_s") / med(our_runs, "wall_s"), 2),
        "cpu_ratio": round(med(ns3_runs, "cpu_s") / med(our_runs, "cpu_s"), 2),
        "ns3_events": ns3_runs[0]["events"],
        "ours_events": our_runs[0]["events"],
        "compile_s": compile_rec["compile_only"]["warm_s"],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "fct_check": check,
        "ns3_runs": ns3_runs,
        "ours_runs": our_runs,
        "first_compile": compile_rec,
        "event_mix": mix,
    }
    print(json.dumps(rec), flush=True)
    if args.no_record:
        return
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "ns3_speed.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    write_md([json.loads(x) for x in (OUT / "ns3_speed.jsonl").read_text().splitlines() if x])


def write_md(recs: list[dict]) -> None:
    cols = ["date", "commit", "cpu", "reps", "ns3_wall_s", "ns3_cpu_s", "ours_wall_s",
            "ours_cpu_s", "ours_sim_s", "wall_ratio", "cpu_ratio", "ns3_events", "ours_events",
            "compile_s", "load_before", "load_after"]  # fmt: skip
    r = recs[-1]
    cold = r["first_compile"]
    mix = {k: v for k, v in r["event_mix"].items() if k not in ("events", "sim_time_us")}
    md = [
        "# HPCC ns-3 and our packet engine, side by side",
        "",
        f"{r['case']}; the same HPCC-format files, whole processes, alternating, pinned to core "
        f"{r['cpu']}; medians of {r['reps']} (ratio = ns-3 / ours). Machine: {r['machine']}. "
        f"ns-3: {r['ns3']}. FCTs: {r['fct_check']['flows_exact']}/{r['fct_check']['flows']} "
        f"flows equal to the ns (mean {r['fct_check']['mean_fct_us_ns3']} us in ns-3, "
        f"{r['fct_check']['mean_fct_us_ours']} us ours).",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    md += ["| " + " | ".join(str(x.get(c, "-")) for c in cols) + " |" for x in recs]
    oc = cold["compile_only"]
    fr = cold["first_run"]
    md += [
        "",
        f"Newest row, ours: {r['ours_sim_s']} s of the {r['ours_wall_s']} s wall in the kernel; "
        f"the rest is interpreter start, imports, numba cache load "
        f"({statistics.median(x['cache_load_s'] for x in r['ours_runs'])} s), setup "
        f"({statistics.median(x['build_s'] for x in r['ours_runs'])} s) and output.",
        "",
        f"First compile on an empty numba cache, one core: `_warm` {oc['warm_s']} s "
        f"(process {oc['wall_s']} s wall, {oc['cpu_s']} s CPU, imports {oc['import_s']} s); a "
        f"whole first `wormsim netsim run` on an empty cache {fr['wall_s']} s wall "
        f"({fr['cache_load_s']} s compiling the kernels, {fr['build_s']} s setting up with its "
        f"helpers compiling, {fr['sim_s']} s simulating).",
        "",
        (
            f"Events: ns-3 {r['ns3_events']:,} in {r['ns3_cpu_s']} s CPU "
            f"({r['ns3_events'] / r['ns3_cpu_s'] / 1e6:.2f} M/s for the whole process), ours "
            if r["ns3_events"]
            else "Events: ns-3's not counted (a build without the local event counter), ours "
        )
        + f"{r['ours_events']:,} in {r['ours_sim_s']} s of kernel "
        f"({r['ours_events'] / r['ours_sim_s'] / 1e6:.2f} M/s); ns-3's count is a local "
        "counter in `DefaultSimulatorImpl::Run`.",
        "",
        f"Event mix of our run, {r['event_mix']['events']:,} events "
        f"({r['event_mix']['sim_time_us']} us of simulated time): "
        + ", ".join(f"{k} {v / r['event_mix']['events']:.1%}" for k, v in mix.items())
        + ".",
    ]
    (OUT / "ns3_speed.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
