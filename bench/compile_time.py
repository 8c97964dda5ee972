"""Benchmark: the packet kernels' first compile on an empty numba cache, per mode and per function.

Each measurement is a fresh process with its own empty ``NUMBA_CACHE_DIR`` that imports the
engine and calls ``_warm`` for one mode (``packet`` or ``wormhole``): what the first run of a
small scenario pays before it simulates. It records the process's CPU time for the import and
for the compile, and numba's compile events (``numba:compile``) turned into each function's
exclusive compile time (its own typing, lowering and LLVM, without the callees it compiled),
with the number of functions compiled.

``--first-run`` also measures what the issue that set the target asks about: the whole first run
of a small scenario (``wormsim netsim run`` of ``tests/data/ns3/dumbbell8/hp``, 8 flows) on an
empty cache, as the CPU time (user + system) of that process, import, compile, simulation and
output included (mode ``first-run``, column ``run_cpu_s``).

``--ref DIR`` measures a second checkout (e.g. a worktree of an older commit) the same way in the
same run, so the ratio compares like with like on a shared machine; a checkout whose ``_warm``
takes no mode compiles both modes at once and is reported as ``both``.

Usage::

    python bench/compile_time.py                       # this checkout, both modes
    python bench/compile_time.py --ref /tmp/old-checkout --repeat 2
    python bench/compile_time.py --modes packet --first-run --ref /tmp/old-checkout

Appends to ``bench/results/compile_time.jsonl`` and rewrites ``compile_time.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _provenance import checkout_row  # noqa: E402
from _records import append_rows, write_md  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
COLS = [
    "date", "commit", "checkout", "mode", "import_cpu_s", "compile_cpu_s", "run_cpu_s",
    "functions", "top_functions",
]  # fmt: skip
SCENARIO = ROOT / "tests" / "data" / "ns3" / "dumbbell8" / "hp"

_PROBE = r"""
import inspect, json, sys, time
from numba.core import event as ev
rec = ev.RecordingListener()
ev.register("numba:compile", rec)
t0 = time.process_time()
try:
    from wormsim.netsim.packet.run import _warm
except ImportError:
    from wormsim.netsim.packet_sim import _warm
t1 = time.process_time()
mode = sys.argv[1]
if "wormhole" in inspect.signature(_warm).parameters:
    _warm(mode == "wormhole")
else:
    mode = "both"
    _warm()
t2 = time.process_time()
stack, excl = [], {}
for ts, e in rec.buffer:
    d = e.data or {}
    f = getattr(d.get("dispatcher"), "py_func", None)
    name = f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}"
    if e.is_start:
        stack.append([name, ts, 0.0])
    else:
        n, start, child = stack.pop()
        excl[n] = excl.get(n, 0.0) + (ts - start) - child
        if stack:
            stack[-1][2] += ts - start
print(json.dumps({"mode": mode, "import_cpu_s": t1 - t0, "compile_cpu_s": t2 - t1,
                  "excl": excl}))
"""


def measure(checkout: Path, mode: str) -> dict:
    """One cold compile of ``mode`` by ``checkout``'s package, in a fresh process."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(checkout)}
        out = subprocess.run(
            [sys.executable, "-c", _PROBE, mode],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    excl = rec.pop("excl")
    total = sum(excl.values()) or 1.0
    top = sorted(excl.items(), key=lambda kv: -kv[1])[:8]
    rec["functions"] = len(excl)
    rec["top_functions"] = ", ".join(
        f"{n.rsplit('.', 1)[-1]} {100 * v / total:.0f}%" for n, v in top
    )
    rec["import_cpu_s"] = round(rec["import_cpu_s"], 2)
    rec["compile_cpu_s"] = round(rec["compile_cpu_s"], 2)
    return rec


def measure_first_run(checkout: Path) -> dict:
    """CPU seconds of ``checkout``'s whole ``wormsim netsim run`` of :data:`SCENARIO` on an empty
    numba cache, in a fresh process."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(checkout)}
        cmd = [
            sys.executable, "-m", "wormsim", "-q", "netsim", "run",
            "--topology", str(SCENARIO / "topology.txt"), "--flows", str(SCENARIO / "flow.txt"),
            "--config", str(SCENARIO / "config.txt"), "-o", str(Path(out) / "run"),
        ]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"mode": "first-run", "run_cpu_s": round(cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", type=Path, help="a second checkout measured alongside")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--modes", nargs="+", default=["packet", "wormhole"])
    parser.add_argument("--first-run", action="store_true", help="also the whole first run")
    args = parser.parse_args()
    checkouts = [("this", ROOT)] + ([("ref", args.ref.resolve())] if args.ref else [])
    date = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows = []
    for _ in range(args.repeat):
        for label, path in checkouts:
            modes = args.modes if label == "this" else args.modes[:1]
            for mode in [*modes, *(["first-run"] if args.first_run else [])]:
                rec = measure_first_run(path) if mode == "first-run" else measure(path, mode)
                row = checkout_row(date, path, label, rec)
                rows.append(row)
                print(json.dumps({k: row.get(k) for k in COLS}), flush=True)
    jsonl = RESULTS / "compile_time.jsonl"
    append_rows(jsonl, rows)
    write_md(
        jsonl,
        RESULTS / "compile_time.md",
        "First compile of the packet kernels",
        "`python bench/compile_time.py` (see its docstring): CPU seconds of a fresh process on an"
        " empty numba cache, per mode; `ref` rows are another checkout measured in the same run"
        " (`both`: a checkout that compiles both modes at once). `top_functions`: the largest"
        " shares of the compile, by each function's exclusive compile time. `first-run` rows:"
        " the CPU time of a whole `wormsim netsim run` of tests/data/ns3/dumbbell8/hp on an"
        " empty cache (`run_cpu_s`).",
        COLS,
    )


if __name__ == "__main__":
    main()
