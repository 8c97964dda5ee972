import numpy as np
import pytest

from tests.netsim.conftest import flowset, star
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.formats.hpcc_io import (
    ip_to_node,
    node_to_ip,
    read_fct,
    read_flows,
    read_topology,
    write_fct,
    write_flows,
    write_topology,
)
from wormsim.netsim.network_config import NetworkSpec, parse_rate_bps

DATA = "tests/data/ns3"


def test_config_cc_modes_and_values():
    hp = NetworkSpec.from_hpcc_config(f"{DATA}/dumbbell8/hp/config.txt")
    assert hp.cc == "hpcc" and hp.int_multi == 4 and hp.rate_ai_bps == 50e6 and hp.has_win
    dc = NetworkSpec.from_hpcc_config(f"{DATA}/dumbbell8/dcqcn/config.txt")
    assert dc.cc == "dcqcn" and dc.rate_ai_bps == 20e6 and dc.rate_hai_bps == 200e6
    assert dc.ack_high_prio and not dc.has_win and dc.kmin_kb[100_000_000_000] == 400
    assert NetworkSpec.from_hpcc_config(f"{DATA}/dumbbell8/timely/config.txt").cc == "timely"
    assert NetworkSpec.from_hpcc_config(f"{DATA}/dumbbell8/dctcp/config.txt").cc == "dctcp"


def test_a_cc_override_drops_the_keys_run_py_writes_per_cc():
    """With ``--cc`` naming another cc than the file's, these keys were written for the wrong one:
    the shared fields' per-cc values, the settings whose default depends on the cc, RP_TIMER."""
    from wormsim.netsim.formats.hpcc_config import CC_KEYS

    assert CC_KEYS == {
        "ACK_HIGH_PRIO", "DCTCP_RATE_AI", "EWMA_GAIN", "FAST_REACT", "HAS_WIN", "INT_MULTI",
        "KMAX_MAP", "KMIN_MAP", "MIN_RATE", "PMAX_MAP", "RATE_AI", "RATE_HAI", "RP_TIMER",
        "VAR_WIN",
    }  # fmt: skip


def test_per_cc_defaults():
    assert NetworkSpec(cc="dcqcn").rate_ai_bps == 20e6
    assert NetworkSpec(cc="hpcc").rate_ai_bps == 50e6
    d = NetworkSpec(cc="dctcp")
    assert d.kmin_kb[100_000_000_000] == d.kmax_kb[100_000_000_000] == 300
    assert d.pmax[100_000_000_000] == 1.0
    with pytest.raises(ValueError):
        NetworkSpec(cc="hpcc", bogus=1)


def test_config_errors(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("CC_MODE 10\n")
    with pytest.raises(NetsimInputError, match="CC_MODE 10"):
        NetworkSpec.from_hpcc_config(p)
    p.write_text("CC_MODE 3\nU_TARGET abc\n")
    with pytest.raises(NetsimInputError, match=r":2 \(U_TARGET\)"):
        NetworkSpec.from_hpcc_config(p)
    with pytest.raises(NetsimInputError, match="does not exist"):
        NetworkSpec.from_hpcc_config(tmp_path / "nope.txt")
    with pytest.raises(NetsimInputError, match="KMIN_MAP"):
        NetworkSpec(cc="hpcc").ecn_for_rate(25_000_000_000)


def test_rates():
    assert parse_rate_bps("100Gbps") == 100e9
    assert parse_rate_bps("50Mb/s") == 50e6


def test_topology_roundtrip(tmp_path):
    t = read_topology(f"{DATA}/fattree4-perm/hp/topology.txt")
    assert t.n_nodes == 36 and t.is_switch.sum() == 20 and t.n_ports == 96
    assert t.port_delay_ps[0] == 1_000_000 and t.port_rate_bps[0] == 100_000_000_000
    write_topology(t, tmp_path / "t.txt")
    t2 = read_topology(tmp_path / "t.txt")
    assert np.array_equal(t.port_node, t2.port_node) and np.array_equal(
        t.port_rate_bps, t2.port_rate_bps
    )
    assert np.array_equal(t.port_delay_ps, t2.port_delay_ps)


def test_flows_and_errors(tmp_path):
    topo = star(3)
    fl = flowset([(0, 1), (1, 2)], 5000, start_ps=2 * 10**12)
    write_flows(fl, tmp_path / "f.txt")
    back = read_flows(tmp_path / "f.txt", topo)
    assert np.array_equal(back.start_ps, fl.start_ps) and np.array_equal(back.dst, fl.dst)
    (tmp_path / "g.txt").write_text("1\n0 3 3 100 1000 2.0\n")
    with pytest.raises(NetsimInputError, match="switch"):
        read_flows(tmp_path / "g.txt", topo)
    (tmp_path / "h.txt").write_text("1\n0 1 3 100 1000\n")
    with pytest.raises(NetsimInputError, match=":2"):
        read_flows(tmp_path / "h.txt", topo)
    (tmp_path / "i.txt").write_text("1\n0 9 3 100 1000 2.0\n")
    with pytest.raises(NetsimInputError, match="unknown node"):
        read_flows(tmp_path / "i.txt", topo)
    with pytest.raises(NetsimInputError, match="does not exist"):
        read_flows(tmp_path / "none.txt")


def test_fct_roundtrip(tmp_path):
    assert node_to_ip(5) == 0x0B000501 and ip_to_node(0x0B000501) == 5
    assert ip_to_node(node_to_ip(300)) == 300
    write_fct(
        tmp_path / "fct.txt",
        [0, 1],
        [8, 8],
        [10000, 10000],
        [100, 100],
        [10, 20],
        [2_000_000, 2_000_000],
        [5_000_000, 3_000_000],
        [4_000, 4_000],
    )
    df = read_fct(tmp_path / "fct.txt")
    assert df["src"].to_list() == [1, 0]  # completion order
    assert df["fct_ns"].to_list() == [3000, 5000]
    assert (tmp_path / "fct.txt").read_text().startswith("0b000101 0b000801 10000 100 20")
