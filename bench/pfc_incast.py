"""Benchmark: Wormhole against packet mode on PFC-heavy incasts, under every congestion control.

An N-to-1 incast of equal flows through one switch whose shared buffer is small enough that PFC
pauses the senders again and again (default: 32 senders, 2 MB each, 2 MiB of buffer, 100 Gbit/s
links, 1 µs delay). Packet mode and Wormhole mode (library defaults, fresh memo store) run on
the same DAG in this process, side by side; a row records both event counts and wall times and
their ratios, the pauses, and the per-flow FCT errors of Wormhole against packet mode. Wormhole
must keep packet mode's FCTs here: a skip or replay must not carry a rate across pauses.

Usage::

    python bench/pfc_incast.py                     # 32 x 2 MB, 2 MiB, every control
    python bench/pfc_incast.py --senders 64 --buffer-mib 4 --no-record

Appends to ``bench/results/pfc_incast.jsonl`` and rewrites ``pfc_incast.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _provenance import git_commit, machine  # noqa: E402
from _records import write_md  # noqa: E402

from wormsim.netsim.cc_registry import CC_NAMES  # noqa: E402
from wormsim.netsim.fabric.topology import Topology  # noqa: E402
from wormsim.netsim.formats.hpcc_io import FlowSet, flows_to_dag  # noqa: E402
from wormsim.netsim.network_config import NetworkSpec  # noqa: E402
from wormsim.netsim.packet.run import run_packet  # noqa: E402
from wormsim.netsim.wormhole.spec import WormholeSpec  # noqa: E402

RESULTS = Path(__file__).parent / "results"
_COLS = [
    "date", "commit", "cc", "senders", "flow_mb", "buffer_mib", "pfc_pauses", "events_packet",
    "events_wormhole", "events_ratio", "wall_ratio", "fct_err_mean_pct", "fct_err_max_pct",
    "skips",
]  # fmt: skip
_INTRO = (
    "`python bench/pfc_incast.py` (see its docstring): an N-to-1 incast through one switch with "
    "a small shared buffer, so PFC pauses every sender; packet and Wormhole mode (defaults, "
    "fresh store) side by side in one process. Wormhole's target here is packet mode's FCTs."
)


def incast(senders: int, size: int):
    """The star topology (hosts 0..senders, switch senders + 1) and the DAG of the incast."""
    n = senders + 1
    topo = Topology.from_links(n + 1, [n], [(i, n, 100e9, 1_000_000) for i in range(n)])
    flows = FlowSet(
        src=np.arange(senders, dtype=np.int32),
        dst=np.full(senders, senders, np.int32),
        pg=np.full(senders, 3, np.int32),
        dport=np.full(senders, 100, np.int32),
        size_bytes=np.full(senders, size, np.int64),
        start_ps=np.zeros(senders, np.int64),
    )
    dag, fn = flows_to_dag(flows)
    return topo, dag, fn


def measure(cc: str, senders: int, size: int, buffer_mib: float) -> dict:
    """One row: packet and Wormhole runs of the incast under ``cc``."""
    topo, dag, fn = incast(senders, size)
    net = NetworkSpec(cc=cc, buffer_size_mb=buffer_mib)
    ref = run_packet(dag, topo, net)
    with tempfile.TemporaryDirectory() as tmp:
        spec = WormholeSpec(memo_path=str(Path(tmp) / "m.sqlite"))
        wh = run_packet(dag, topo, net, wormhole=spec)
    a = (ref.node_finish_ps[fn] - ref.node_start_ps[fn]).astype(float)
    b = (wh.node_finish_ps[fn] - wh.node_start_ps[fn]).astype(float)
    err = np.abs(b - a) / a
    rc, wc = ref.counters, wh.counters
    return {
        "cc": cc,
        "senders": senders,
        "flow_mb": size / 1e6,
        "buffer_mib": buffer_mib,
        "pfc_pauses": int(rc["pfc_pauses"]),
        "events_packet": int(rc["events_processed"]),
        "events_wormhole": int(wc["events_processed"]),
        "events_ratio": round(rc["events_processed"] / max(wc["events_processed"], 1), 3),
        "wall_ratio": round(rc["sim_wall_s"] / max(wc["sim_wall_s"], 1e-9), 3),
        "fct_err_mean_pct": round(100 * float(err.mean()), 4),
        "fct_err_max_pct": round(100 * float(err.max()), 4),
        "skips": int(wc["skips"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--senders", type=int, default=32)
    ap.add_argument("--flow-mb", type=float, default=2.0)
    ap.add_argument("--buffer-mib", type=float, default=2.0)
    ap.add_argument("--ccs", nargs="*", default=list(CC_NAMES))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
    }
    jsonl = RESULTS / "pfc_incast.jsonl"
    size = int(round(args.flow_mb * 1e6))
    for cc in args.ccs:
        row = {**meta, **measure(cc, args.senders, size, args.buffer_mib)}
        print(json.dumps(row), flush=True)
        if not args.no_record:
            with open(jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            write_md(jsonl, RESULTS / "pfc_incast.md", "PFC-heavy incasts", _INTRO, _COLS)


if __name__ == "__main__":
    main()
