"""Benchmark: why flows of an experiment are not fast-forwarded (a census of the detector).

Wormhole skips a partition once every flow in it has a full window of rate samples that passes
the steadiness test (``docs/wormhole.md``). On the experiments of ``bench/generalization.py``
where it skips little, this counts why. It runs an experiment in Wormhole mode with the
memo off (fast-forward only, the library's detector defaults), stops the kernel every
``--step-us`` of simulated time and classifies every active fabric flow:

* ``skipped``: its partition is fast-forwarded;
* ``landed``: its partition's skip has ended (it runs packet by packet until it changes: the
  tail, and what outlives the partition's first flow to finish);
* ``filling``: its window is not full yet, i.e. its partition formed (or changed) less than one
  window span ago;
* ``unsteady``: the window is full and fails the test;
* ``steady``: the window passes, but a partner in its partition does not (or the skip would be
  too short).

The row gives each class's share of the flow-samples, the partition sizes seen by the flows
(median, 90th percentile), how old the partitions of ``filling`` flows were (median, 90th
percentile), and the run's events, skips and partitions formed.

Usage::

    python bench/steadiness_census.py --only gpt13b-128-clos-4to1-timely gpt13b-128-clos
    python bench/steadiness_census.py --list

Appends to ``bench/results/steadiness_census.jsonl`` and rewrites ``steadiness_census.md``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import generalization as gen
import numpy as np
from _records import write_md

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
COLS = [
    "date", "commit", "scale", "experiment", "window_us", "skipped_pct", "landed_pct",
    "filling_pct", "unsteady_pct", "steady_pct", "partition_flows_p50", "partition_flows_p90",
    "filling_age_us_p50", "filling_age_us_p90", "events", "skips", "partitions_formed",
]  # fmt: skip


def census(name: str, scale: float, step_us: float) -> dict:
    """Run experiment ``name`` of ``bench/generalization.py`` (fast-forward only) and classify
    its active fabric flows every ``step_us`` of simulated time."""
    from wormsim.netsim.packet import state as st
    from wormsim.netsim.packet.engine import init_kernel, run_kernel
    from wormsim.netsim.packet.run import _warm, build_state
    from wormsim.netsim.packet.wormhole.steady import window_stats

    cfg, _, arrays, topo = gen.build_inputs(gen._BY_NAME[name], scale)
    spec = cfg.sim.wormhole.model_copy(update={"memo_mode": "off", "memoize": False})
    A, P, _, _ = build_state(
        arrays, topo, cfg.network, routing=cfg.sim.routing, seed=cfg.sim.seed, wormhole=spec
    )
    S = st.make_state(A, wormhole=True)
    _warm(True)
    init_kernel(S, P, 0)
    step = int(step_us * 1e6)
    never = np.iinfo(np.int64).max
    classes: Counter[str] = Counter()
    sizes: list[int] = []
    ages: list[float] = []
    t = 0
    while True:
        status = run_kernel(S, P, t + step, 64, 4096, never)
        if status == st.RUN_NEEDS_ROOM:  # grow the pool or heap, carry on from the same point
            A = st.grow_pool(A) if A["cnt"][st.C_FREE] < 64 else st.grow_heap(A)
            S = st.make_state(A, wormhole=True)
            continue
        if status != st.RUN_STOPPED:
            break
        t += step
        now = int(A["cnt"][st.C_NOW])
        for q in A["wh_act"][: int(A["cnt"][st.C_WH_NACT])].tolist():
            r = int(A["wh_lab"][q])
            if A["qp_done"][q] or r < 0:
                continue
            sizes.append(int(A["wh_psize"][r]))
            if A["wh_state"][r] == 2:
                classes["skipped" if A["wh_t1_ps"][r] > now else "landed"] += 1
            elif A["wh_n"][q] < P.wh_window:
                classes["filling"] += 1
                ages.append((now - int(A["wh_tform_ps"][r])) / 1e6)
            elif window_stats(S, P, q)[0]:
                classes["steady"] += 1
            else:
                classes["unsteady"] += 1
    n = max(sum(classes.values()), 1)
    cnt = A["cnt"]

    def pct(k: str) -> float:
        return round(100 * classes[k] / n, 1)

    def q(xs: list, p: float) -> float:
        return round(float(np.percentile(xs, p)), 1) if xs else 0.0

    return {
        "experiment": name,
        "window_us": P.wh_window * P.wh_ps / 1e6,
        "skipped_pct": pct("skipped"),
        "landed_pct": pct("landed"),
        "filling_pct": pct("filling"),
        "unsteady_pct": pct("unsteady"),
        "steady_pct": pct("steady"),
        "partition_flows_p50": q(sizes, 50),
        "partition_flows_p90": q(sizes, 90),
        "filling_age_us_p50": q(ages, 50),
        "filling_age_us_p90": q(ages, 90),
        "events": int(cnt[st.C_EVENTS]),
        "skips": int(cnt[st.C_WH_SKIPS]),
        "partitions_formed": int(cnt[st.C_WH_PARTS]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--only", nargs="*", default=None, help="experiment names")
    parser.add_argument("--step-us", type=float, default=20.0, help="census period, us")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.list:
        for e in gen.EXPERIMENTS:
            print(f"{e.name:30s} # {e.why}")
        return
    names = gen.chosen(parser, args.only)
    meta = gen.run_meta(args.scale)
    jsonl = RESULTS / "steadiness_census.jsonl"
    for name in names:
        row = {**meta, **census(name, args.scale, args.step_us)}
        print(json.dumps(row), flush=True)
        if not args.no_record:
            with jsonl.open("a") as f:
                f.write(json.dumps(row) + "\n")
    if not args.no_record:
        write_md(
            jsonl, RESULTS / "steadiness_census.md", "Why flows are not fast-forwarded",
            "`python bench/steadiness_census.py` (see its docstring): Wormhole fast-forward only "
            "(memo off, detector defaults); every active fabric flow classified every 20 us of "
            "simulated time. Shares are of flow-samples; `filling`: the window is not full yet "
            "(the partition formed or changed less than a window span ago).",
            COLS,
        )  # fmt: skip


if __name__ == "__main__":
    main()
