"""Regenerate the htsim Swift reference runs of ``tests/data/htsim/`` from a built htsim.

    python tests/data/htsim/make_reference.py PATH/TO/htsim_swift [--out DIR] [--seeds 1-8]
                                              [--only SCENARIO ...]

PATH/TO/htsim_swift is the ``sim/datacenter/htsim_swift`` program of Broadcom/csg-htsim (commit
in ``README.md``) with the local driver patch that README describes (``-seed``, PATH lines,
picosecond time output); the script stops if the program does not print the ``seed`` line of
that patch. It does not build htsim and is not needed by any test: the tests only read the files
it wrote. Stdlib only.

For every scenario and seed it writes the connection matrix (htsim's own format), runs htsim
once in a temporary directory, keeps its stdout as ``stdout_seed<N>.txt`` and parses it into
``fct.csv`` (one row per flow and seed), ``paths.csv`` (the queues each flow's data and ACKs
crossed) and ``runs.csv`` (one row per seed); ``scenario.json`` and ``command.txt`` describe the
inputs. All times come from htsim's own ``Flow ... finished at <us>`` lines, which the patched
driver prints to the picosecond; they are kept exactly (decimal arithmetic, no float).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
HTSIM_COMMIT = "841d9e7be46bb968eece766aa4b6c044c7799f67"

HOSTS = 16  # htsim's 3-tier FatTreeTopology for 16 nodes: k = 4
MTU = 1048  # htsim data packet on the wire = wormsim's 1000 B payload + 48 B header
ACK_BYTES = 40  # SwiftAck::ACKSIZE
QUEUE_PKTS = 1000  # -q: every switch output queue holds 1000 x 1048 B (drop-tail)
CWND_PKTS = 15  # -cwnd: initial window (driver default, given explicitly)
END_US = 50_000  # -end: simulated time limit, far beyond the last FCT
LINK_BPS = 100_000_000_000  # HOST_NIC in datacenter/main.h; every tier runs at it
LINK_LATENCY_NS = 1000  # FatTreeTopology's default hop latency (1 us per link, 0 switch latency)
SEEDS = list(range(1, 9))


def perm_pairs() -> list[tuple[int, int]]:
    """The random derangement of ``tests/data/ns3/fattree4-perm`` (seed 1): same pairs."""
    rng = random.Random(1)
    while True:
        d = list(range(HOSTS))
        rng.shuffle(d)
        if all(d[i] != i for i in range(HOSTS)):
            return [(i, d[i]) for i in range(HOSTS)]


#: flows are (src, dst, packets); ``alone``: every flow is a run of its own on the idle network
#: (all equal-cost paths of a host pair have the same length, so one seed suffices).
SCENARIOS: dict[str, dict] = {
    "fattree4-incast8": dict(
        flows=[(s, 0, 2000) for s in range(8, 16)],
        what="8 senders (hosts 8-15, pods 2 and 3: every path 6 links) -> host 0, "
        "2000 packets each",
    ),
    "fattree4-incast15": dict(
        flows=[(s, 0, 2000) for s in range(1, 16)],
        what="15 senders (every other host: paths of 2, 4 and 6 links) -> host 0, "
        "2000 packets each",
    ),
    "fattree4-perm": dict(
        flows=[(s, d, 10_000) for s, d in perm_pairs()],
        what="16 flows i -> perm[i] (the derangement of tests/data/ns3/fattree4-perm), "
        "10000 packets each",
    ),
    "fattree4-alone": dict(
        flows=[(s, d, n) for n in (2000, 10_000) for s, d in ((2, 3), (0, 2), (0, 5))],
        alone=True,
        seeds=[1],
        what="one flow alone on the idle fat-tree, per path length (2, 4, 6 links: 2->3, "
        "0->2, 0->5) and size (2000, 10000 packets): the standalone FCTs of the other "
        "scenarios' flows",
    ),
}

SWIFT = {
    "where": "sim/swift.cpp SwiftSrc::SwiftSrc, SwiftSubflowSrc::SwiftSubflowSrc; "
    "driver sim/datacenter/main_swift.cpp",
    "initial_cwnd_pkts": CWND_PKTS,
    "ai_pkts": 1.0,
    "beta": 0.8,
    "max_mdf": 0.5,
    "base_target_delay_us": 20.0,
    "hop_scaling_us_per_hop": 20.0 / 6.55,
    "hop_scaling_effective": "0: the subflow's Route is a clone() and Route::clone() "
    "leaves hop_count at 0",
    "fs_range_us": 100.0,
    "fs_min_cwnd_pkts": 0.1,
    "fs_max_cwnd_pkts": 100.0,
    "fs_alpha_us": 100.0 / (1 / 0.1**0.5 - 1 / 100**0.5),
    "fs_beta_us": -(100.0 / (1 / 0.1**0.5 - 1 / 100**0.5)) / 10.0,
    "fs_cwnd_argument": "floor(cwnd_bytes / mss) packets (integer division); "
    "0 packets -> fs = fs_range",
    "target_delay": "base + clamp(fs_alpha / sqrt(floor(cwnd/mss)) + fs_beta, 0, fs_range) "
    "+ hop_count * h",
    "min_cwnd_bytes": 10,
    "max_cwnd_pkts": 1000,
    "pacing": "cwnd < 1 packet: one packet every srtt * mss / cwnd",
    "decrease_once_per": "smoothed RTT since the last decrease",
    "rtx_reset_threshold": 5,
    "rto": "TCP-like: srtt + 4 mdev (gains 1/8, 1/4), min 100 us, initial 1 ms, doubled "
    "per timeout; the timer scanner runs every 10 ms",
    "fast_retransmit_dupacks": 3,
    "nic_per_flow_queue_pkts": 3,
    "plb": False,
    "subflows": 1,
}


def cm_text(flows: list[tuple[int, int, int]]) -> str:
    """htsim connection matrix. main_swift reads src, dst, start; it ignores ``size`` (the flow
    size is ``-flowsize``, one for all flows of a run); the size written is the bytes sent."""
    lines = [f"Nodes {HOSTS}", f"Connections {len(flows)}"]
    lines += [f"{s}->{d} start 0 size {n * MTU}" for s, d, n in flows]
    return "\n".join(lines) + "\n"


def command(binary: str, packets: int, seed: int, cm: str = "traffic.cm") -> list[str]:
    # -flowsize is in packets and SwiftSrc::set_flowsize adds one mss: packets-1 -> packets sent
    return [
        binary, "-nodes", str(HOSTS), "-tm", cm, "-flowsize", str(packets - 1),
        "-mtu", str(MTU), "-q", str(QUEUE_PKTS), "-cwnd", str(CWND_PKTS), "-end", str(END_US),
        "-seed", str(seed), "-o", "logout.dat",
    ]  # fmt: skip


FIN = re.compile(r"^Flow swift_(\d+)_(\d+) finished at (\S+) total bytes (\d+)$", re.M)
PATH = re.compile(r"^PATH flow (\d+) (\d+)->(\d+) data (.*) ack (.*)$", re.M)
PS = Decimal("0.001")  # ns with picosecond resolution, htsim's time unit


def parse(stdout: str, flows: list[tuple[int, int, int, int]], seed: int):
    """flows: (flow_id, src, dst, packets) in connection-matrix order."""
    fins: dict[tuple[int, int], tuple[Decimal, int]] = {}
    for m in FIN.finditer(stdout):  # printed on every ACK at or past the end: keep the first
        fins.setdefault((int(m[1]), int(m[2])), (Decimal(m[3]), int(m[4])))
    fct = []
    for fid, s, d, n in flows:
        fin = fins.get((s, d))
        ns = "" if fin is None else f"{(fin[0] * 1000).quantize(PS)}"
        assert fin is None or fin[1] == n * MTU, (s, d, fin)
        fct.append([seed, fid, s, d, n * MTU, n, 0, ns, ns])
    paths = [
        [seed, flows[int(m[1])][0], int(m[2]), int(m[3]), m[4], m[5]] for m in PATH.finditer(stdout)
    ]
    counts = [
        stdout.count("retransmit_packet"),
        len(re.findall(r" RTO \d", stdout)),
        stdout.count("hit min cwnd"),
        stdout.count("hit max cwnd"),
    ]
    return fct, paths, counts


def write_csv(path: Path, header: list[str], rows) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def runs_of(sc: dict, seeds: list[int]):
    """(label, seed, [(flow_id, src, dst, packets)]) for every htsim run of a scenario."""
    flows = [(i, s, d, n) for i, (s, d, n) in enumerate(sc["flows"])]
    if sc.get("alone"):
        return [(f"flow{f[0]}", seed, [f]) for seed in sc.get("seeds", seeds) for f in flows]
    assert len({n for _, _, _, n in flows}) == 1, "one -flowsize per run"
    return [(f"seed{seed}", seed, flows) for seed in sc.get("seeds", seeds)]


def scenario_json(name: str, sc: dict, runs) -> dict:
    return {
        "name": name,
        "what": sc["what"],
        "simulator": {
            "repo": "Broadcom/csg-htsim", "commit": HTSIM_COMMIT, "program": "htsim_swift",
        },
        "topology": {
            "kind": "3-tier fat-tree, k = 4 (htsim FatTreeTopology for 16 nodes)",
            "hosts": HOSTS, "tor_switches": 8, "agg_switches": 8, "core_switches": 4,
            "wiring": "host h on ToR h//2; ToR t in pod t//2, linked to aggs 2*(t//2) and "
            "2*(t//2)+1; agg a linked to cores a%2 and a%2+2; so core c reaches agg 2*p + c%2 "
            "of every pod p",
            "link_rate_gbps": LINK_BPS / 1e9,
            "link_latency_ns": LINK_LATENCY_NS,
            "switch_latency_ns": 0,
            "queue": "per output port, FIFO, drop-tail (RandomQueue: also drops 10 % of arrivals "
            "that would fill the last 3 packets of the buffer); no PFC, no ECN, no shared buffer",
            "queue_bytes": QUEUE_PKTS * MTU,
            "host_nic": "FairScheduler: round-robin over flows (ACKs of a flow get their own "
            "queue), unbounded; a Swift flow keeps at most 3 data packets in it",
            "routing": "source-routed; per flow one of the equal-cost paths at random (data: "
            "SwiftSrc::set_paths shuffle; ACKs: main_swift rand() % n), fixed for the flow's life; "
            "paths.csv lists them",
        },
        "packets": {
            "data_packet_bytes": MTU,
            "header_bytes": 0,
            "ack_bytes": ACK_BYTES,
            "note": "htsim has no header: a data packet is mss bytes on the wire and all of it "
            "counts as flow data; 1048 = wormsim payload 1000 + FRAME_HEADER_BYTES 48",
            "wormsim_payload_bytes_per_packet": 1000,
            "wormsim_header_bytes_per_packet": 48,
        },
        "flows": [
            {"flow_id": i, "src": s, "dst": d, "packets": n, "size_bytes": n * MTU,
             "wormsim_size_bytes": n * 1000, "start_ns": 0}
            for i, (s, d, n) in enumerate(sc["flows"])
        ],
        "swift": SWIFT,
        "runs": [
            {"label": lab, "seed": seed, "flow_ids": [f[0] for f in fl],
             "command": " ".join(command("htsim_swift", fl[0][3], seed, cm_name(sc, lab)))}
            for lab, seed, fl in runs
        ],
        "fct": "sender side: the time the ACK covering the flow's last byte reaches the sender "
        "(SwiftSrc::update_dsn_ack); flows start at 0 ns, so fct_ns = finish_ns",
    }  # fmt: skip


def cm_name(sc: dict, label: str) -> str:
    return f"traffic_{label}.cm" if sc.get("alone") else "traffic.cm"


def run_scenario(binary: str, name: str, sc: dict, seeds: list[int], out: Path) -> list[list]:
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    runs = runs_of(sc, seeds)
    (d / "scenario.json").write_text(json.dumps(scenario_json(name, sc, runs), indent=1) + "\n")
    cmds, fct_rows, path_rows, run_rows = [], [], [], []
    for label, seed, flows in runs:
        cm, cmf = cm_text([(s, dd, n) for _, s, dd, n in flows]), cm_name(sc, label)
        (d / cmf).write_text(cm)
        cmds.append(" ".join(command("htsim_swift", flows[0][3], seed, cmf)))
        with tempfile.TemporaryDirectory() as tmp:  # logout.dat (htsim's binary log) is dropped
            (Path(tmp) / cmf).write_text(cm)
            t0 = time.perf_counter()
            p = subprocess.run(
                command(binary, flows[0][3], seed, cmf), cwd=tmp, capture_output=True, text=True
            )
            wall = time.perf_counter() - t0
        if p.returncode != 0 or f"\nseed {seed}\n" not in p.stdout:
            sys.exit(f"{name} {label}: htsim failed or is not the patched driver:\n{p.stderr}")
        (d / f"stdout_{label}.txt").write_text(p.stdout)
        fct, paths, counts = parse(p.stdout, flows, seed)
        fct_rows += fct
        path_rows += paths
        done = [Decimal(r[8]) for r in fct if r[8] != ""]
        mean = f"{(sum(done) / len(done)).quantize(PS)}" if done else ""
        run_rows.append(
            [label, seed, f"{wall:.3f}", f"{len(done)}/{len(fct)}",
             f"{max(done)}" if done else "", mean, *counts, len(p.stderr)]
        )  # fmt: skip
    (d / "command.txt").write_text("\n".join(cmds) + "\n")
    fct_cols = "seed flow_id src dst size_bytes packets start_ns finish_ns fct_ns"
    write_csv(d / "fct.csv", fct_cols.split(), fct_rows)
    write_csv(d / "paths.csv", "seed flow_id src dst data_queues ack_queues".split(), path_rows)
    write_csv(
        d / "runs.csv",
        ["run", "seed", "wall_s", "flows_done", "max_fct_ns", "mean_fct_ns", "retransmits",
         "rto_events", "min_cwnd_hits", "max_cwnd_hits", "stderr_bytes"],
        run_rows,
    )  # fmt: skip
    return run_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", help="path to the patched sim/datacenter/htsim_swift")
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: this one)")
    ap.add_argument("--seeds", default="1-8", help="seed range a-b (default 1-8)")
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="scenarios to run")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    seeds = list(range(lo, hi + 1))
    binary = str(Path(a.binary).resolve())
    for name in a.only or SCENARIOS:
        sc = SCENARIOS[name]
        rows = run_scenario(binary, name, sc, seeds, a.out)
        us = [n * MTU * 8 / LINK_BPS * 1e6 for _, _, n in sc["flows"]]
        print(f"{name}: one flow's bytes at line rate {min(us):.2f}-{max(us):.2f} us, "
              f"all flows' bytes {sum(us):.2f} us")  # fmt: skip
        for r in rows:
            print(f"  {r[0]}: wall {r[2]} s, done {r[3]}, max {Decimal(r[4]) / 1000} us, "
                  f"mean {Decimal(r[5]) / 1000} us, retransmits {r[6]}, RTOs {r[7]}")  # fmt: skip


if __name__ == "__main__":
    main()
