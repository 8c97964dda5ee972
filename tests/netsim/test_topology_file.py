"""Fabric files for training runs (wormsim.netsim.formats.topology_file): SimAI's generator output
and
HPCC topology.txt, read into the packet fabric the built-in builders would make."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.formats.hpcc_io import write_topology
from wormsim.netsim.formats.topology_file import fabric_topology, read_fabric_file

SIMAI = Path(__file__).resolve().parents[1] / "data" / "simai"
TEMPLATES = {
    "Spectrum-X_128g_8gps_400Gbps_H100": dict(gpus=128, ports=1),
    "AlibabaHPN_64g_8gps_DualToR_SinglePlane_200Gbps_H100": dict(gpus=64, ports=2),
    "DCN+SingleToR_128g_8gps_400Gbps_H100": dict(gpus=128, ports=1),
}


def _raw(path: Path):
    """The file as SimAI's SetupNetwork reads it: header, NVSwitch ids, switch ids, links."""
    toks = path.read_text().split()
    n, gps, nv, sw, m = (int(x) for x in toks[:5])
    ids = [int(x) for x in toks[6 : 6 + nv + sw]]
    rest = toks[6 + nv + sw :]
    links = [rest[i : i + 5] for i in range(0, len(rest), 5)]
    assert len(links) == m
    return n, gps, set(ids[:nv]), set(ids[nv:]), links


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_simai_templates_map_gpus_to_hosts_and_nvswitches_to_nvlink(name: str):
    path = SIMAI / name
    n, gps, nvswitch, switches, links = _raw(path)
    fab = read_fabric_file(path)
    assert fab.format == "simai" and fab.gpu_type == "H100"
    assert fab.gpus == n - len(nvswitch) - len(switches) == TEMPLATES[name]["gpus"]
    assert fab.gpus_per_server == gps == 8
    nv_links = [ln for ln in links if int(ln[0]) in nvswitch or int(ln[1]) in nvswitch]
    assert len(fab.links) == len(links) - len(nv_links)
    assert fab.nvlink_bps == 2880 * 10**9  # the generator's nvlink_bw, one NVSwitch per server
    topo = fabric_topology(fab, fab.gpus, gps, 0)
    assert topo.nvlink_rate_bps == 2880 * 10**9
    assert int((~topo.is_switch).sum()) == fab.gpus and int(topo.is_switch.sum()) == len(switches)
    # every GPU keeps its NIC port(s): one, or two with dual ToR
    nic_ports = np.bincount(topo.port_node, minlength=topo.n_nodes)[: fab.gpus]
    assert (nic_ports == TEMPLATES[name]["ports"]).all()
    # GPUs are grouped server by server, as SimAI numbers them
    assert (topo.host_server[: fab.gpus] == np.arange(fab.gpus) // gps).all()
    # every link of the file (but the NVSwitch ones) is there with its rate
    fabric_links = [ln for ln in links if ln not in nv_links]
    rates = sorted(int(float(ln[2].removesuffix("Gbps")) * 1e9) for ln in fabric_links)
    assert sorted(int(r) for r in topo.port_rate_bps[0::2]) == rates


@pytest.mark.parametrize("kind", ["fat_tree", "rail_optimized", "clos"])
def test_an_hpcc_file_of_a_builtin_fabric_reads_back_to_the_same_fabric(tmp_path: Path, kind):
    cluster = ClusterSpec(gpus=32, gpus_per_node=4, topology=kind, hosts_per_leaf=8)
    built = build_topology(cluster)
    write_topology(built, tmp_path / "topology.txt")
    fab = read_fabric_file(tmp_path / "topology.txt")
    assert fab.format == "hpcc" and fab.gpus_per_server is None
    back = fabric_topology(fab, 32, 4, int(cluster.nvlink_gbps * 1e9))
    for field in ("is_switch", "port_node", "port_peer", "port_rate_bps", "port_delay_ps",
                  "node_ports", "host_server"):  # fmt: skip
        assert np.array_equal(getattr(back, field), getattr(built, field)), field
    assert back.nvlink_rate_bps == built.nvlink_rate_bps


def test_hosts_beyond_the_workload_stay_idle_and_servers_must_agree():
    fab = read_fabric_file(SIMAI / "Spectrum-X_128g_8gps_400Gbps_H100")
    topo = fabric_topology(fab, 8, 8, 0)
    assert int((~topo.is_switch).sum()) == 128  # the fabric is whole; ranks 0..7 use server 0
    with pytest.raises(NetsimInputError, match="only 128"):
        fabric_topology(fab, 256, 8, 0)
    with pytest.raises(NetsimInputError, match="gpus_per_server is 8 but cluster.gpus_per_node"):
        fabric_topology(fab, 128, 4, 0)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "topo"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("6 2 1 2\n4 5\n0 4 1Gbps 1us 0\n", r"topo:1: the header has 4 fields"),
        (
            "5 2 0 2 3 H100\n3 4\n0 3 1Gbps 1us 0\n1 3 1Gbps 1us 0\n2 4 1Gbps 1us 0\n",
            r"topo: 3 GPUs are not a whole number of servers of 2",
        ),
        (  # an NVSwitch (node 4) cabled to a fabric switch (node 5)
            "6 2 1 1 3 H100\n4 5\n0 4 1Gbps 1us 0\n1 4 1Gbps 1us 0\n4 5 1Gbps 1us 0\n",
            r"topo:5: NVSwitch 4 links switch 5",
        ),
        ("4 2 0 1 2 H100\n3\n0 3 1Gbps 1us 0\n1 9 1Gbps 1us 0\n", r"topo:4: unknown node id"),
        ("4 2 0 1 2 H100\n3\n0 3 1Gbps 1us 0\n", r"topo: header says 2 links but 1 link lines"),
        ("4 2 0 1 1 H100\n3\n0 3 fast 1us 0\n", r"topo:3: cannot parse the data rate"),
        ("4 x 0 1 1 H100\n3\n0 3 1Gbps 1us 0\n", r"topo:1: expected integers"),
    ],
)
def test_bad_simai_files_name_the_line(tmp_path: Path, text: str, match: str):
    with pytest.raises(NetsimInputError, match=match):
        read_fabric_file(_write(tmp_path, text))
