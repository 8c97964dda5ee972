"""One entry for every engine: simulate() and HPCC scenarios in all three modes."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from wormsim.netsim.cli import app
from wormsim.netsim.common.flow_plan import plan_flows
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.formats.hpcc_config import read_hpcc_config
from wormsim.netsim.formats.hpcc_io import flows_to_dag, read_flows, read_topology
from wormsim.netsim.scenario import run_hpcc_scenario
from wormsim.netsim.sim_spec import SimSpec
from wormsim.netsim.simulate import MODES, simulate

D = "tests/data/ns3/fattree4-perm/hp"


def _inputs():
    topo = read_topology(f"{D}/topology.txt")
    flows = read_flows(f"{D}/flow.txt", topo)
    net, _ = read_hpcc_config(f"{D}/config.txt")
    dag, fnode = flows_to_dag(flows)
    return topo, flows, net, dag, fnode


def test_every_mode_finishes_every_flow_on_the_same_routes():
    topo, flows, net, dag, fnode = _inputs()
    plan = plan_flows(dag, topo, routing="ns3", seed=0)
    fct = {}
    for mode in MODES:
        r = simulate(dag, topo, net, SimSpec(mode=mode, routing="ns3"))
        assert (r.node_finish_ps[fnode] > 0).all(), mode
        # one flow plan: both engines number QPs and route flows identically
        assert np.array_equal(r.flow_qp, plan.flow_qp)
        assert np.array_equal(r.routes[0], plan.r_off) and np.array_equal(r.routes[1], plan.r_ports)
        fct[mode] = (r.node_finish_ps[fnode] - flows.start_ps).astype(float)
    err = np.abs(fct["wormhole"] - fct["packet"]) / fct["packet"]
    assert err.mean() < 0.01  # the Wormhole bound, on a 16-flow permutation
    # max-min fluid ignores queues and CC dynamics, but a flow cannot beat its line rate
    assert (fct["flow"] > 0).all()


def test_monitors_only_in_packet_mode():
    topo, _, net, dag, _ = _inputs()
    for mode in ("wormhole", "flow"):
        with pytest.raises(NetsimInputError, match="packet mode only"):
            simulate(dag, topo, net, SimSpec(mode=mode), monitor_period_ns=1000)
    with pytest.raises(NetsimInputError, match=">= 0"):
        simulate(dag, topo, net, SimSpec(), monitor_period_ns=-1)


def test_scenario_summary_keys_are_the_pipeline_s_in_every_mode():
    for mode in MODES:
        r = run_hpcc_scenario(f"{D}/topology.txt", f"{D}/flow.txt", f"{D}/config.txt", mode=mode)
        assert (r.finish_ps > 0).all()
        c = r.counters
        assert c["mode"] == mode and c["events_processed"] > 0 and c["sim_wall_s"] > 0
        assert ("memo_fingerprint" in c) == (mode == "wormhole")


def test_cli_runs_a_scenario_in_wormhole_mode(tmp_path):
    out = tmp_path / "out"
    args = ["run", "--topology", f"{D}/topology.txt", "--flows", f"{D}/flow.txt"]
    args += ["--config", f"{D}/config.txt", "--mode", "wormhole", "-o", str(out)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["mode"] == "wormhole" and s["flows_finished"] == 16 and "memo_store" in s
    assert len((out / "fct.txt").read_text().splitlines()) == 16
