"""``wormsim topology export`` and ``show``: an exported built-in fabric runs to the same
iteration as the built-in one (flow and packet mode), and show counts what a fabric holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import wormsim
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.fabric.describe import describe_fabric
from wormsim.netsim.formats.topology_file import fabric_topology, read_fabric_file

from ..pipelines.conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "examples" / "default.yaml"
SPECTRUM = ROOT / "tests" / "data" / "simai" / "Spectrum-X_128g_8gps_400Gbps_H100"


@pytest.mark.parametrize("mode", ["flow", "packet"])
def test_the_exported_default_fabric_runs_to_the_builtin_iteration_time(tmp_path: Path, mode):
    topo_file = tmp_path / "default.topo"
    r = invoke("topology", "export", DEFAULT, "-o", topo_file)
    assert r.exit_code == 0, r.output
    assert topo_file.read_text().split("\n", 1)[0].split()[-1] == "A100"  # SimAI header
    builtin = wormsim.run(DEFAULT, mode=mode, alone=False)
    from_file = wormsim.run(
        DEFAULT, mode=mode, overrides={"cluster.topology_file": str(topo_file)}, alone=False
    )
    assert from_file.iteration_time_s == builtin.iteration_time_s


def test_an_hpcc_export_is_the_same_fabric_port_for_port(tmp_path: Path):
    out = tmp_path / "topology.txt"
    r = invoke("topology", "export", DEFAULT, "-o", out, "--format", "hpcc")
    assert r.exit_code == 0, r.output
    built = build_topology(ClusterSpec(gpus=32, gpus_per_node=8, host_link_gbps=100,
                                       fabric_link_gbps=400))  # fmt: skip
    fabric = read_fabric_file(out)
    read = fabric_topology(fabric, 32, 8, built.nvlink_rate_bps)
    for name in ("port_node", "port_peer", "port_rate_bps", "port_delay_ps", "is_switch"):
        assert (getattr(read, name) == getattr(built, name)).all(), name


def test_a_simai_export_reads_back_port_for_port_with_nvlink(tmp_path: Path):
    cluster = ClusterSpec(gpus=64, gpus_per_node=8, topology="clos", host_link_gbps=200,
                          fabric_link_gbps=400, oversubscription=2, nvlink_gbps=2880)  # fmt: skip
    built = build_topology(cluster)
    from wormsim.netsim.formats.simai_topology import write_fabric

    fabric = read_fabric_file(write_fabric(built, tmp_path / "t", "simai", 8, "H100"))
    assert fabric.gpus_per_server == 8 and fabric.nvlink_bps == 2880 * 10**9
    read = fabric_topology(fabric, 64, 8, 0)
    for name in ("port_node", "port_peer", "port_rate_bps", "port_delay_ps", "host_server"):
        assert (getattr(read, name) == getattr(built, name)).all(), name


def test_show_counts_tiers_rates_oversubscription_and_nvlink(tmp_path: Path):
    png = tmp_path / "fabric.png"
    r = invoke("topology", "show", DEFAULT, "--plot", png, "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["nodes_by_tier"] == {"hosts": 32, "leaf": 8, "spine": 1}
    rates = {row["tiers"]: row["rate_Gbps"] for row in data["links_by_tier"]}
    assert rates == {"hosts-leaf": 100, "leaf-spine": 400}
    assert data["oversubscription"]["leaf"] == [1, 1]  # 4 x 100 down, 1 x 400 up
    assert (data["servers"], data["gpus_per_server"], data["nvlink_Gbps"]) == (4, 8, 2400)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = invoke("topology", "show", SPECTRUM)
    assert text.exit_code == 0 and "16 servers of 8 GPUs at 2880 Gbps" in text.output
    assert "oversubscription at leaf: 2:1" in text.output  # Spectrum-X's template is 2:1


def test_describe_a_three_tier_fat_tree():
    s = describe_fabric(
        build_topology(
            ClusterSpec(gpus=16, gpus_per_node=4, topology="fat_tree", fabric_link_gbps=100)
        )
    )
    assert list(s.nodes_by_tier) == ["hosts", "leaf", "spine", "core"]
    assert s.oversubscription["leaf"] == (1.0, 1.0)


def test_bad_exports_and_sources_exit_2_naming_the_problem(tmp_path: Path):
    # a fat-tree whose idle hosts are not whole servers cannot be said in SimAI's format
    exp = tmp_path / "ft.yaml"
    exp.write_text(DEFAULT.read_text().replace("rail_optimized", "fat_tree"))
    r = invoke("topology", "export", exp, "-o", tmp_path / "x")
    assert r.exit_code == 2 and "--format hpcc" in r.output and not (tmp_path / "x").exists()
    r = invoke("topology", "show", tmp_path)
    assert r.exit_code == 2 and "is a directory" in r.output
    r = invoke("topology", "show", tmp_path / "missing.topo")
    assert r.exit_code == 2 and "missing.topo" in r.output and "Traceback" not in r.output
