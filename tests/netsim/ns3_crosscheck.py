"""HPCC ns-3 reference scenarios: per-flow FCT errors (run as a script to print a table)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from wormsim.netsim.hpcc_io import flows_to_dag, read_flows, read_topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet_sim import run_packet

DATA = Path(__file__).resolve().parents[1] / "data" / "ns3"
SCENARIOS = ("dumbbell8", "fattree4-perm")
CCS = ("hp", "dcqcn", "timely", "dctcp")


def crosscheck(scenario: str, cc: str) -> dict[str, float]:
    """Errors of our per-flow FCT against ns-3's ``fct.csv``."""
    d = DATA / scenario / cc
    topo = read_topology(d / "topology.txt")
    flows = read_flows(d / "flow.txt", topo)
    net = NetworkSpec.from_hpcc_config(d / "config.txt")
    dag, fnode = flows_to_dag(flows)
    res = run_packet(dag, topo, net, routing="ns3")
    ours = (res.node_finish_ps[fnode] - flows.start_ps) / 1e3
    ref = pl.read_csv(d / "fct.csv").sort("flow_id")["fct_ns"].to_numpy().astype(float)
    err = np.abs(ours - ref) / ref
    return {
        "mean_fct_err": abs(ours.mean() - ref.mean()) / ref.mean(),
        "max_flow_err": err.max(),
        "mean_flow_err": err.mean(),
        "unfinished": int((res.node_finish_ps[fnode] < 0).sum()),
        "wall_s": res.counters["sim_wall_s"],
        "events": res.counters["events_processed"],
    }


if __name__ == "__main__":
    import sys

    scen = sys.argv[1:] or list(SCENARIOS)
    print(
        f"{'scenario':15s} {'cc':7s} {'meanFCTerr':>10s} {'maxFlowErr':>10s} {'avgFlowErr':>10s}"
        f" {'wall_s':>7s} {'events':>10s}"
    )
    for s in scen:
        for c in CCS:
            r = crosscheck(s, c)
            print(
                f"{s:15s} {c:7s} {r['mean_fct_err']:10.2%} {r['max_flow_err']:10.2%} "
                f"{r['mean_flow_err']:10.2%} {r['wall_s']:7.2f} {r['events']:10,d}"
            )
