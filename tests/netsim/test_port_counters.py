"""Per-port PFC and ECN counters of the packet engine, and the run directory's port facts.

The incast is HPCC ns-3's ``incast-mixed`` with TIMELY: 6 senders into one receiver through one
switch, where ns-3 itself records 319 pause frames, all received by senders 3, 4 and 5.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from tests.pipelines.conftest import TINY, invoke
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.fabric.paths import port_payload_bytes
from wormsim.netsim.flow.run import run_flow
from wormsim.netsim.formats.hpcc_io import flows_to_dag, read_flows, read_topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet

INCAST = Path(__file__).resolve().parents[1] / "data" / "ns3" / "incast-mixed" / "timely"

PORT_COLUMNS = [
    "port",
    "node",
    "peer",
    "tier",
    "rate_bps",
    "delay_ps",
    "payload_bytes",
    "peak_queue_bytes",
    "pfc_paused_ps",
    "pfc_pause_count",
    "ecn_mark_count",
]
FABRIC_TIERS = {"leaf", "spine", "core"}


def _incast_inputs():
    topo = read_topology(INCAST / "topology.txt")
    flows = read_flows(INCAST / "flow.txt", topo)
    net = NetworkSpec.from_hpcc_config(INCAST / "config.txt")
    dag, fnode = flows_to_dag(flows)
    return topo, flows, net, dag, fnode


@pytest.fixture(scope="module")
def incast():
    topo, flows, net, dag, fnode = _incast_inputs()
    assert net.pfc_enabled
    res = run_packet(dag, topo, net, routing="ns3")
    return topo, flows, res, fnode


def test_the_incast_really_pauses_and_marks(incast):
    _, _, res, fnode = incast
    assert (res.node_finish_ps[fnode] > 0).all()
    assert res.counters["pfc_pauses"] > 0
    assert res.counters["ecn_marks"] > 0


def test_per_port_counters_add_up_to_the_global_ones(incast):
    topo, _, res, _ = incast
    for a in (res.pfc_paused_ps, res.pfc_pause_frames, res.ecn_marks):
        assert a.shape == (topo.n_ports,) and a.dtype == np.int64
        assert (a >= 0).all()
    assert res.pfc_pause_frames.sum() == res.counters["pfc_pauses"]
    assert res.ecn_marks.sum() == res.counters["ecn_marks"]


def test_pause_time_only_where_pause_frames_arrived_and_within_the_run(incast):
    topo, flows, res, _ = incast
    paused = res.pfc_paused_ps > 0
    framed = res.pfc_pause_frames > 0
    assert paused.any()
    assert not (paused & ~framed).any()  # no pause time without a pause frame
    assert not (framed & ~paused).any()  # a pause lasts until the resume arrives, later
    end = res.counters["sim_end_ps"]
    assert (res.pfc_paused_ps <= end).all()
    # nothing is paused before the first flow starts
    assert (res.pfc_paused_ps <= end - int(flows.start_ps.min())).all()
    # pause frames come from switches (hosts never send PFC), to the ports feeding them
    assert topo.is_switch[topo.port_peer[framed]].all()
    # the same ports ns-3 saw paused: the NICs of senders 3, 4 and 5
    pfc = pl.read_csv(
        INCAST / "pfc.txt",
        separator=" ",
        has_header=False,
        new_columns=["time_ns", "node", "node_type", "if", "pause"],
    )
    ns3_paused = set(pfc.filter(pl.col("pause") == 1)["node"].to_list())
    assert set(topo.port_node[framed].tolist()) == ns3_paused == {3, 4, 5}


def test_ecn_marks_only_on_switch_ports_that_carry_data(incast):
    topo, flows, res, fnode = incast
    marked = res.ecn_marks > 0
    assert marked.any()
    assert topo.is_switch[topo.port_node[marked]].all()
    qp_size = np.zeros(res.sport.size, np.int64)
    qp_size[res.flow_qp[fnode]] = flows.size_bytes
    carried = port_payload_bytes(topo, res.routes, qp_size) > 0
    assert not (marked & ~carried).any()
    # a port marks at most every data packet it sends
    assert res.ecn_marks.sum() <= res.counters["data_packet_hops"]


def test_flow_mode_counts_nothing_per_port():
    topo, _, net, dag, _ = _incast_inputs()
    res = run_flow(dag, topo, net, routing="ns3")
    for a in (res.pfc_paused_ps, res.pfc_pause_frames, res.ecn_marks):
        assert a.shape == (topo.n_ports,)
        assert a.dtype == np.int64
        assert not a.any()


# ---------------------------------------------------------------------------------------------
# The run directory: ports.parquet and the path columns of flows.parquet
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("tiny")
    exp = tmp / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    run = tmp / "run"
    r = invoke("pipeline", "run", exp, "-o", run, "--mode", "packet", "--no-alone")
    assert r.exit_code == 0, r.output
    return run


def _run_topology(run: Path):
    cfg = yaml.safe_load((run / "experiment.yaml").read_text())
    return build_topology(ClusterSpec(**cfg["cluster"]))


def test_ports_table_has_one_row_per_directed_port(tiny_run):
    topo = _run_topology(tiny_run)
    ports = pl.read_parquet(tiny_run / "ports.parquet")
    assert ports.columns == PORT_COLUMNS
    assert ports.height == topo.n_ports
    assert ports["port"].to_list() == list(range(topo.n_ports))
    assert np.array_equal(ports["node"].to_numpy(), topo.port_node)
    assert np.array_equal(ports["peer"].to_numpy(), topo.port_peer)
    assert np.array_equal(ports["rate_bps"].to_numpy(), topo.port_rate_bps)
    assert np.array_equal(ports["delay_ps"].to_numpy(), topo.port_delay_ps)
    for c in PORT_COLUMNS[6:]:
        assert (ports[c] >= 0).all(), c
    # the per-port counters add up to the run's totals
    summary = json.loads((tiny_run / "summary.json").read_text())
    assert summary["mode"] == "packet"
    assert ports["pfc_pause_count"].sum() == summary["pfc_pauses"]
    assert ports["ecn_mark_count"].sum() == summary["ecn_marks"]
    assert (ports["pfc_paused_ps"] <= summary["sim_end_ps"]).all()
    host_tx = ports.filter(pl.col("tier") == "host→leaf")
    assert host_tx.height == int((~topo.is_switch).sum())


def test_flows_ideal_fct_is_positive_and_a_lower_bound(tiny_run):
    flows = pl.read_parquet(tiny_run / "flows.parquet")
    for c in ("tier", "hops", "bottleneck_bps", "base_rtt_ps", "ideal_fct_ps"):
        assert c in flows.columns, c
    sized = flows.filter(pl.col("size_bytes") > 0)
    assert (sized["ideal_fct_ps"] > 0).all()
    assert set(flows["tier"].unique().to_list()) <= FABRIC_TIERS | {"nvlink", "local"}
    fabric = flows.filter(pl.col("tier").is_in(FABRIC_TIERS))
    assert fabric.height > 0
    assert (fabric["hops"] >= 2).all()
    assert (fabric["base_rtt_ps"] > 0).all()
    assert (fabric["ideal_fct_ps"] > fabric["base_rtt_ps"]).all()
    # the empty network is the best case: no flow beats it (1 ns of rounding allowed)
    slack = fabric["fct_ps"] - fabric["ideal_fct_ps"]
    worst = fabric.with_columns(slack=slack).sort("slack").head(3)
    assert (slack >= -1000).all(), worst
    others = flows.filter(~pl.col("tier").is_in(FABRIC_TIERS))
    assert (others["hops"] == 0).all() and (others["base_rtt_ps"] == 0).all()


def test_nvlink_flows_ideal_is_their_bytes_at_the_nvlink_rate(tiny_run):
    topo = _run_topology(tiny_run)
    flows = pl.read_parquet(tiny_run / "flows.parquet")
    nv = flows.filter(pl.col("tier") == "nvlink")
    assert nv.height > 0
    assert (nv["bottleneck_bps"] == topo.nvlink_rate_bps).all()
    expect = nv["size_bytes"].to_numpy() * 8e12 / topo.nvlink_rate_bps
    assert np.abs(nv["ideal_fct_ps"].to_numpy() - expect).max() <= 0.5
    assert (nv["fct_ps"] >= nv["ideal_fct_ps"]).all()
    # NVLink flows stay inside a server: both ends share it
    srv = topo.host_server
    assert (srv[nv["src"].to_numpy()] == srv[nv["dst"].to_numpy()]).all()


def test_host_nics_carry_exactly_the_fabric_bytes(tiny_run):
    flows = pl.read_parquet(tiny_run / "flows.parquet")
    ports = pl.read_parquet(tiny_run / "ports.parquet")
    fabric_bytes = flows.filter(pl.col("tier").is_in(FABRIC_TIERS))["size_bytes"].sum()
    assert fabric_bytes > 0
    assert ports.filter(pl.col("tier") == "host→leaf")["payload_bytes"].sum() == fabric_bytes
    assert ports.filter(pl.col("tier") == "leaf→host")["payload_bytes"].sum() == fabric_bytes
    # per host: its NIC sent its fabric flows' bytes
    sent = (
        flows.filter(pl.col("tier").is_in(FABRIC_TIERS))
        .group_by("src")
        .agg(pl.col("size_bytes").sum())
    )
    nic = ports.filter(pl.col("tier") == "host→leaf")
    got = dict(zip(nic["node"].to_list(), nic["payload_bytes"].to_list(), strict=True))
    for h, b in zip(sent["src"].to_list(), sent["size_bytes"].to_list(), strict=True):
        assert got[h] == b, h


def test_the_run_publishes_the_tables_counters_and_port_outputs(tiny_run):
    from wormsim.netsim.packet.counters import COUNTERS
    from wormsim.netsim.packet.port_outputs import PORT_OUTPUTS

    summary = json.loads((tiny_run / "summary.json").read_text())
    public = {r.public for r in COUNTERS if r.public is not None}
    packet = {r.public for r in COUNTERS if r.public is not None and r.group != "wormhole"}
    assert packet <= set(summary)
    assert not (public - packet) & set(summary)  # Wormhole's only in Wormhole mode
    assert PORT_COLUMNS[7:] == [o.column for o in PORT_OUTPUTS]
