"""Benchmark: instructions executed (cachegrind), for comparisons the shared machine's noise hides.

Wall and CPU times on the project's 2-core machine move by 15-20 % from run to run with what
else runs, so a change of a few per cent to the event loop or the first compile cannot be seen
in them. Instruction counts do not depend on load. For each checkout this runs, under
``valgrind --tool=cachegrind``:

* ``compile-<mode>``: a fresh process that imports the engine and calls ``_warm(mode)`` on an
  empty numba cache (what ``bench/compile_time.py`` times);
* each case: a process that runs a smaller form of a ``bench/engine.py`` case (the k=8 fat-tree
  permutation at 1 MB per flow, the 64-host ring all-reduce of 4 MB), less a process that runs
  the same case with tiny flows, so the count is the simulation's (import and cache load cancel
  out); ``per_event`` is that over the events the case processed.

The cases' kernels are compiled natively first into a cache the cachegrind run loads, with the
CPU pinned (``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``: this CPU's name with the features valgrind
emulates), so valgrind runs the code a native run would, less the instructions valgrind lacks.
Python's string hashing is seeded (``PYTHONHASHSEED=0``) so a rerun counts the same. Instructions
are not time (a cache miss costs more than an add), but two builds of the same kernels that
execute the same instructions run at the same speed to within a few per cent.

Usage::

    python bench/instructions.py                          # this checkout
    python bench/instructions.py --ref /tmp/other --jobs 2

Each checkout takes about 15 minutes of CPU (the compile about 10 of them); ``--jobs`` runs the
checkouts side by side (the counts do not depend on load). Appends to
``bench/results/instructions.jsonl`` and rewrites ``instructions.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _provenance import checkout_row  # noqa: E402
from _records import append_rows, write_md  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
COLS = ["date", "commit", "checkout", "what", "instructions", "events", "per_event", "hash"]

CASES = {
    # name: (bench/engine.py builder, its size, the tiny size of the baseline run)
    "fattree k=8 perm 128x1MB": ("fattree", 1_000_000, 1_000),
    "ring allreduce 64 hosts 4MB": ("ring", 4_000_000, 64_000),
}

_CASE_PROBE = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import engine as B
from wormsim.netsim.formats.hpcc_io import flows_to_dag
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import _warm, run_packet
kind, size = sys.argv[2], int(sys.argv[3])
_warm()
if kind == "fattree":
    perm = B._derangement(128, 1)
    dag, _ = flows_to_dag(B._flows([(i, perm[i]) for i in range(128)], size))
else:
    dag = B.ring_allreduce_dag(64, size)
res = run_packet(dag, B._fattree(8), NetworkSpec(cc="hpcc"), routing="ns3")
digest = hashlib.sha256(res.node_finish_ps.tobytes()).hexdigest()[:16]
print(json.dumps({"events": res.counters["events_processed"], "hash": digest}))
"""

_COMPILE_PROBE = r"""
import sys
from wormsim.netsim.packet.run import _warm
_warm(sys.argv[1] == "wormhole")
"""

_FEATURES = "import llvmlite.binding as ll; print(ll.get_host_cpu_features().flatten())"
_NAME = "import llvmlite.binding as ll; print(ll.get_host_cpu_name())"


def _pinned_cpu() -> dict[str, str]:
    """This CPU's name with the features valgrind's CPU has (what both runs compile for)."""
    out = {}
    for key, code, tool in (
        ("NUMBA_CPU_NAME", _NAME, []),
        ("NUMBA_CPU_FEATURES", _FEATURES, ["valgrind", "--tool=none", "-q"]),
    ):
        res = subprocess.run(
            [*tool, sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        out[key] = res.stdout.strip().splitlines()[-1]
    return out


def _cachegrind(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Instructions ``cmd`` executes under cachegrind, and its last line of output."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        res = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                f"--cachegrind-out-file={out}",
                *cmd,
            ],  # fmt: skip
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        summary = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
    last = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    return int(summary.group(1)), last


def measure(checkout: Path, modes: list[str], pinned: dict[str, str]) -> list[dict]:
    """The counts of one checkout: its cold compile per mode, then each case."""
    rows = []
    base = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    for mode in modes:
        with tempfile.TemporaryDirectory() as cache:
            env = {**base, "NUMBA_CACHE_DIR": cache}
            n, _ = _cachegrind([sys.executable, "-c", _COMPILE_PROBE, mode], env, checkout)
        rows.append({"what": f"compile-{mode}", "instructions": n})
    bench = str(Path(__file__).parent)
    with tempfile.TemporaryDirectory() as cache:
        env = {**base, **pinned, "NUMBA_CACHE_DIR": cache}
        probe = [sys.executable, "-c", _CASE_PROBE, bench]
        subprocess.run([*probe, "ring", "64000"], cwd=checkout, env=env, check=True)  # compile
        for name, (kind, size, tiny) in CASES.items():
            n, out = _cachegrind([*probe, kind, str(size)], env, checkout)
            n0, out0 = _cachegrind([*probe, kind, str(tiny)], env, checkout)
            rec, rec0 = json.loads(out), json.loads(out0)
            events = rec["events"] - rec0["events"]
            rows.append(
                {
                    "what": name,
                    "instructions": n - n0,
                    "events": events,
                    "per_event": round((n - n0) / events),
                    "hash": rec["hash"],
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", type=Path, action="append", default=[], help="more checkouts")
    parser.add_argument("--modes", nargs="*", default=["packet"], help="cold compiles to count")
    parser.add_argument("--jobs", type=int, default=1, help="checkouts measured at once")
    args = parser.parse_args()
    checkouts = [("this", ROOT)] + [("ref", p.resolve()) for p in args.ref]
    date = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    pinned = _pinned_cpu()
    with ThreadPoolExecutor(args.jobs) as pool:
        done = pool.map(lambda c: measure(c[1], args.modes, pinned), checkouts)
        rows = []
        for (label, path), found in zip(checkouts, done, strict=True):
            for rec in found:
                row = checkout_row(date, path, label, rec)
                rows.append(row)
                print(json.dumps({k: row.get(k) for k in COLS}), flush=True)
    jsonl = RESULTS / "instructions.jsonl"
    append_rows(jsonl, rows)
    write_md(
        jsonl,
        RESULTS / "instructions.md",
        "Instructions executed (cachegrind)",
        "`python bench/instructions.py` (see its docstring): instructions of a cold `_warm(mode)`"
        " (`compile-<mode>`), and of each case's simulation less a run of the same case with"
        " tiny flows (`per_event`: over the events that adds); `hash`: the case's finish times."
        " `ref` rows are other checkouts measured in the same run. Counts do not depend on the"
        " machine's load.",
        COLS,
    )


if __name__ == "__main__":
    main()
