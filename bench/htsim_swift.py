"""wormsim's Swift against htsim's Swift: flow completion times on htsim's k = 4 fat-tree.

Runs every scenario of ``tests/data/htsim`` through wormsim's packet engine with the settings
that make the two models comparable (``tests/netsim/htsim_crosscheck.py``), twice: on htsim's
own data and ACK paths, run by run (``pinned``), and on wormsim's ECMP hash with seeds 1-8
(``own ECMP``, compared as a distribution). Appends one record per scenario and path choice to
``bench/results/htsim_swift.jsonl`` and rewrites ``htsim_swift.md``::

    python bench/htsim_swift.py            # run and record
    python bench/htsim_swift.py --no-record
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT))

from _provenance import git_commit, machine  # noqa: E402
from _records import write_md  # noqa: E402

from tests.netsim import htsim_crosscheck as hx  # noqa: E402

OUT = Path(__file__).parent / "results"
SEEDS = range(1, 9)


def _pct(x: float) -> float:
    return round(100 * x, 2)


def alone() -> dict:
    ref = hx.reference("fattree4-alone").sort("flow_id")["fct_ns"].to_numpy()
    ours = np.array([hx.run("fattree4-alone", 1, flow_ids=[i])[0] for i in range(len(ref))])
    err = ours / ref - 1
    return {
        "scenario": "fattree4-alone",
        "paths": "pinned",
        "runs": len(ref),
        "mean_err_pct": _pct(float(np.mean(err))),
        "worst_run_mean_err_pct": _pct(float(err[np.argmax(np.abs(err))])),
        "worst_flow_err_pct": _pct(float(np.abs(err).max())),
    }


def shared(name: str, pinned: bool) -> dict:
    ref = hx.reference(name)
    run_err, flow_err = [], []
    ours_means, ref_means = [], []
    for seed in SEEDS:
        r = ref.filter(pl.col("seed") == seed).sort("flow_id")["fct_ns"].to_numpy()
        if pinned:
            ours = hx.run(name, seed)
        else:
            ours = hx.run(name, None, ecmp_seed=seed)
        ours_means.append(ours.mean())
        ref_means.append(r.mean())
        run_err.append(ours.mean() / r.mean() - 1)
        if pinned:
            flow_err.append(np.abs(ours / r - 1).max())
    out = {
        "scenario": name,
        "paths": "pinned" if pinned else "own ECMP",
        "runs": len(SEEDS),
        "mean_err_pct": _pct(float(np.mean(ours_means) / np.mean(ref_means) - 1)),
    }
    if pinned:  # run by run on the same paths; with its own ECMP only the spread compares
        out["worst_run_mean_err_pct"] = _pct(float(run_err[int(np.argmax(np.abs(run_err)))]))
        out["worst_flow_err_pct"] = _pct(float(max(flow_err)))
    else:
        out["run_means_us"] = (
            f"ours {min(ours_means) / 1e3:.0f}-{max(ours_means) / 1e3:.0f}, "
            f"htsim {min(ref_means) / 1e3:.0f}-{max(ref_means) / 1e3:.0f}"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = [alone()]
    for name in hx.SCENARIOS:
        rows.append(shared(name, pinned=True))
        rows.append(shared(name, pinned=False))
    wall = time.perf_counter() - t0
    stamp = {"date": time.strftime("%Y-%m-%d"), "commit": git_commit(), "machine": machine()}
    for r in rows:
        print(json.dumps(r))
    print(f"{wall:.1f} s")
    if args.no_record:
        return
    jsonl = OUT / "htsim_swift.jsonl"
    with jsonl.open("a") as f:
        for r in rows:
            f.write(json.dumps({**stamp, **r}) + "\n")
    write_md(
        jsonl,
        OUT / "htsim_swift.md",
        "wormsim's Swift against htsim's Swift",
        "`python bench/htsim_swift.py`: FCTs of `tests/data/htsim` (htsim's k = 4 fat-tree, "
        "100 Gbit/s, 1 µs links; htsim commit 841d9e7) against wormsim's packet engine with "
        "PFC and ECN off, picosecond serialisation and hop scaling off (htsim's is inert). "
        "`pinned`: each flow on htsim's data and ACK paths of that run; `own ECMP`: wormsim's "
        "ECMP hash with seeds 1-8 against htsim's seeds 1-8. Errors are wormsim / htsim - 1: "
        "`mean_err_pct` of the mean FCT over all runs, `worst_run_mean_err_pct` the run whose "
        "mean is furthest off, `worst_flow_err_pct` the flow furthest off in any run.",
        ["date", "commit", "scenario", "paths", "runs", "mean_err_pct",
         "worst_run_mean_err_pct", "worst_flow_err_pct", "run_means_us"],
    )  # fmt: skip


if __name__ == "__main__":
    main()
