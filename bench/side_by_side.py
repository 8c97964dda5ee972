"""Benchmark: this checkout against an earlier commit, the same Wormhole runs side by side.

A speed change to the engine is quoted as a ratio of two runs made at the same time on the same
machine, one per core, so that both see the same load. This script checks ``--base`` out into a
temporary git worktree and runs ``bench/wormhole.py --wormhole-only`` (full-size Table 1 or
scale workloads, cold store, library defaults) from both trees at once, one process each. It
records both walls, their ratio, whether the two runs simulated the same thing (events and
iteration time), and the memo bridge's share. Both trees first run a small experiment, so that
neither pays for compiling kernels inside the timed runs.

Usage::

    python bench/side_by_side.py --base 000b298 --workloads gpt22b-256 --ccs hpcc
    python bench/side_by_side.py --base 000b298 --workloads gpt175b-1024 --ccs hpcc

Appends to ``bench/results/side_by_side.jsonl`` and rewrites ``side_by_side.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _provenance import git_commit, machine
from _records import write_md

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

_COLS = [
    "date", "commit", "base", "workload", "cc", "scale", "same_result", "events",
    "wall_s", "base_wall_s", "speedup", "bridge_wall_s", "base_bridge_wall_s",
]  # fmt: skip
_INTRO = (
    "`python bench/side_by_side.py` (see its docstring): `bench/wormhole.py --wormhole-only` "
    "from this checkout and from `base`, at the same time, one process per core. `speedup` = "
    "base wall / this wall (simulation only); `same_result`: equal events and iteration time."
)


def _start_runs(tree: Path, args: argparse.Namespace) -> subprocess.Popen:
    """Start ``bench/wormhole.py --wormhole-only`` from ``tree`` on ``args``' experiments."""
    cmd = [
        sys.executable, str(tree / "bench" / "wormhole.py"), "--wormhole-only", "--no-record",
        "--scale", str(args.scale), "--workloads", *args.workloads, "--ccs", *args.ccs,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True)


def _parse(out: str) -> dict[tuple[str, str], dict]:
    rows = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if "workload" in r:
                rows[(r["workload"], r["cc"])] = r
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare against")
    parser.add_argument("--workloads", nargs="+", required=True)
    parser.add_argument("--ccs", nargs="+", default=["hpcc"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), args.base],
            check=True, capture_output=True,
        )  # fmt: skip
        try:
            # compile both trees' kernels first (a fresh worktree has a cold numba cache, and
            # the memo bridge's kernels compile on first call, inside the timed simulation)
            warm = argparse.Namespace(scale=0.01, workloads=["gpt7b-64"], ccs=["hpcc"])
            for p in [_start_runs(ROOT, warm), _start_runs(base_tree, warm)]:
                p.communicate()
            procs = [_start_runs(ROOT, args), _start_runs(base_tree, args)]
            outs = [p.communicate()[0] for p in procs]
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                check=False, capture_output=True,
            )  # fmt: skip
    if any(p.returncode for p in procs):
        sys.exit("a run failed; see its output above")
    mine, theirs = (_parse(o) for o in outs)
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "base": args.base,
        "scale": args.scale,
    }
    for key, r in mine.items():
        b = theirs[key]
        row = {
            **meta, "workload": key[0], "cc": key[1],
            "same_result": r["events"] == b["events"] and r["iteration_s"] == b["iteration_s"],
            "events": r["events"], "base_events": b["events"],
            "wall_s": r["wormhole_wall_s"], "base_wall_s": b["wormhole_wall_s"],
            "speedup": round(b["wormhole_wall_s"] / max(r["wormhole_wall_s"], 1e-9), 2),
            "bridge_wall_s": r["bridge_wall_s"], "base_bridge_wall_s": b["bridge_wall_s"],
        }  # fmt: skip
        print(json.dumps(row), flush=True)
        if not args.no_record:
            RESULTS.mkdir(parents=True, exist_ok=True)
            jsonl = RESULTS / "side_by_side.jsonl"
            with open(jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            write_md(
                jsonl, RESULTS / "side_by_side.md", "This checkout against an earlier commit",
                _INTRO, _COLS,
            )  # fmt: skip


if __name__ == "__main__":
    main()
