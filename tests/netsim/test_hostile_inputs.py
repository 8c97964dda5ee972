"""HPCC scenario inputs out of range, malformed or unsupported get ``error: file:line …``, exit 2.

Plus the flow-mode contract on an HPCC scenario, and ``--cc`` overriding a config's CC_MODE.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.hostile import assert_rejected, invoke
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.formats.hpcc_io import read_fct
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.scenario import run_hpcc_scenario

DATA = Path(__file__).resolve().parents[1] / "data" / "ns3"


@pytest.fixture
def sc(tmp_path) -> dict[str, Path]:
    """A copy of dumbbell8/hp: ``topology``, ``flows``, ``config`` and an ``out`` dir to write."""
    paths = {"out": tmp_path / "out"}
    for name, f in (("topology", "topology.txt"), ("flows", "flow.txt"), ("config", "config.txt")):
        paths[name] = Path(shutil.copy(DATA / "dumbbell8" / "hp" / f, tmp_path / f))
    return paths


def _run(sc: dict[str, Path], *extra: str, mode: str = "flow"):
    return invoke(
        "netsim", "run", "--topology", sc["topology"], "--flows", sc["flows"],
        "--config", sc["config"], "--mode", mode, "-o", sc["out"], *extra,
    )  # fmt: skip


def _replace_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n")


def test_flow_mode_on_an_hpcc_scenario_every_flow_finishes_no_faster_than_alone(tmp_path):
    d = DATA / "fattree4-perm" / "hp"
    out = tmp_path / "out"
    r = invoke(
        "netsim", "run", "--topology", d / "topology.txt", "--flows", d / "flow.txt",
        "--config", d / "config.txt", "--mode", "flow", "-o", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    ours, ref = read_fct(out / "fct.txt"), read_fct(d / "fct.txt")
    assert ours.height == ref.height == 16
    assert (ours["fct_ns"] >= ours["standalone_fct_ns"]).all()
    # the standalone FCT is ns-3's: computed over the real route of every flow
    key = ["src", "dst"]
    both = ours.join(ref, on=key, suffix="_ns3")
    assert both.height == 16
    assert (both["standalone_fct_ns"] == both["standalone_fct_ns_ns3"]).all()
    flows = pl.read_parquet(out / "flows.parquet")
    assert (flows["finish_ps"] > flows["start_ps"]).all()


def test_cc_override_replaces_the_other_ccs_values_with_upstream_defaults(sc):
    dc = DATA / "dumbbell8" / "dcqcn" / "config.txt"
    hp = NetworkSpec.from_hpcc_config(sc["config"])
    over = NetworkSpec.from_hpcc_config(dc, cc="hpcc")
    assert over == hp  # dcqcn's run.py values (HAS_WIN 0, RATE_AI 20Mb/s, ...) are not kept
    assert NetworkSpec.from_hpcc_config(dc, cc="dcqcn").rate_ai_bps == 20e6
    shutil.copy(dc, sc["config"])
    r = _run(sc, "--cc", "hpcc", mode="packet")
    assert r.exit_code == 0, r.output
    assert "8/8 flows finished" in r.output


def test_simulator_stop_time_cuts_flows_that_finish_later(sc):
    text = (
        sc["config"].read_text().replace("SIMULATOR_STOP_TIME 4.00", "SIMULATOR_STOP_TIME 2.0001")
    )
    sc["config"].write_text(text)  # flows start at 2.0 s and need about 1 ms
    r = _run(sc)
    assert r.exit_code == 0, r.output
    assert "0/8 flows finished" in r.output
    assert (sc["out"] / "fct.txt").read_text() == ""


@pytest.mark.parametrize(
    ("lineno", "line", "needle"),
    [
        (1, "2000000000 1 9", "node_num is 2000000000"),
        (1, "10 1 900000", "link_num is 900000"),
        (1, "10 one 9", "three integers"),
        (3, "0 9 1e30Gbps 0.001ms 0", "out of range"),
        (3, "0 9 infGbps 0.001ms 0", "'infGbps'"),
        (3, "0 9 nanGbps 0.001ms 0", "'nanGbps'"),
        (3, "0 9 -100Gbps 0.001ms 0", "out of range"),
        (3, "0 9 0Gbps 0.001ms 0", "out of range"),
        (3, "0 9 100Gbps 1e30ms 0", "1e30ms"),
        (3, "0 9 100Gbps -1ms 0", ">= 0"),
        (3, "0 9 100Gbps nanms 0", "finite"),
        (3, "0 9 100Gbps 5s 0", "over 1 s"),
        (3, "0 9 100Gbps 0.001ms 0.5", "packet loss"),
        (3, "0 0 100Gbps 0.001ms 0", "self-loop"),
        (3, "0 77 100Gbps 0.001ms 0", "unknown node id"),
    ],
)
def test_bad_topology_line_names_file_and_line(sc, lineno, line, needle):
    _replace_line(sc["topology"], lineno, line)
    assert_rejected(_run(sc), f"topology.txt:{lineno}", needle, out=sc["out"])


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("0 8 3 100 1000000000000000000000000000000 2.0", "size is"),
        ("0 8 3 100 1e30 2.0", "cannot parse"),
        ("0 8 3 100 10000000 inf", "start time"),
        ("0 8 3 100 10000000 nan", "start time"),
        ("0 8 3 100 10000000 -1", "start time"),
        ("0 8 3 100 10000000 1e30", "start time"),
        ("0 8 3 100 0 2.0", "size is 0"),
        ("8 8 3 100 10000000 2.0", "to itself"),
        ("0 8 9 100 10000000 2.0", "pg is 9"),
        ("0 8 3 70000 10000000 2.0", "dport is 70000"),
        ("0 9 3 100 10000000 2.0", "switch"),
        ("0 99 3 100 10000000 2.0", "unknown node id 99"),
    ],
)
def test_bad_flow_line_names_file_and_line(sc, line, needle):
    _replace_line(sc["flows"], 2, line)
    assert_rejected(_run(sc), "flow.txt:2", needle, out=sc["out"])


def test_flows_that_overflow_the_clock_are_refused_before_running(sc):
    text = sc["topology"].read_text().replace("100Gbps", "1Kbps")
    sc["topology"].write_text(text)
    _replace_line(sc["flows"], 2, f"0 8 3 100 {2**40} 2.0")
    assert_rejected(_run(sc), "flow.txt", "simulated time", "days", out=sc["out"])


def test_mixed_priority_groups_are_refused(sc):
    _replace_line(sc["flows"], 3, "1 8 2 100 10000000 2.0")
    assert_rejected(_run(sc), "flow.txt", "priority groups [2, 3]", out=sc["out"])


@pytest.mark.parametrize("name", ["topology", "flows", "config"])
def test_non_utf8_files_name_file_and_line(sc, name):
    data = sc[name].read_bytes().splitlines(keepends=True)
    data[1] = b"\xff\xfe" + data[1]
    sc[name].write_bytes(b"".join(data))
    assert_rejected(_run(sc), f"{sc[name].name}:2", "not UTF-8", out=sc["out"])


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("USE_DYNAMIC_PFC_THRESHOLD 0", "static PFC thresholds are not implemented"),
        ("use_dynamic_pfc_threshold 0", "static PFC thresholds are not implemented"),
        ("GLOBAL_T 0", "per-pair windows"),
        ("MULTI_RATE 1", "multi-rate"),
        ("L2_BACK_TO_ZERO 1", "go-back-N"),
        ("ERROR_RATE_PER_LINK 0.01", "packet loss"),
        ("SAMPLE_FEEDBACK 1", "sampled INT"),
        ("LINK_DOWN 2000000000 0 9", "link failures"),
        ("PAUSE_TIME 5", "unknown key PAUSE_TIME"),
        ("BOGUS_KEY 1", "unknown key BOGUS_KEY"),
        ("HAS_WIN 0", "HPCC needs a window"),
        ("RATE_AI 1e30Gbps", "out of range"),
        ("RP_TIMER inf", "finite"),
        ("BUFFER_SIZE nan", "finite"),
        ("BUFFER_SIZE 1e30", "BUFFER_SIZE"),
        ("EWMA_GAIN 0", "EWMA_GAIN"),
        ("U_TARGET 0", "U_TARGET"),
        ("INT_MULTI 0", "INT_MULTI"),
        ("PACKET_PAYLOAD_SIZE 0", "PACKET_PAYLOAD_SIZE"),
        ("PACKET_PAYLOAD_SIZE 1000000000000000000000000", "PACKET_PAYLOAD_SIZE"),
        ("ENABLE_QCN 2", "0 or 1"),
        ("PMAX_MAP 1 100000000000 2.0", "PMAX_MAP"),
        ("RATE_AI 50Mb/s 60Mb/s", "one value"),
    ],
)
def test_bad_or_unsupported_config_setting_names_file_line_and_reason(sc, line, needle):
    lines = sc["config"].read_text().splitlines()
    key = line.split()[0].upper()
    lines = [x for x in lines if x.split()[:1] != [key]] + [line]
    sc["config"].write_text("\n".join(lines) + "\n")
    assert_rejected(_run(sc), f"config.txt:{len(lines)}", needle, out=sc["out"])


def test_config_key_twice_is_refused(sc):
    sc["config"].write_text(sc["config"].read_text() + "RATE_AI 60Mb/s\n")
    assert_rejected(_run(sc), "RATE_AI is set twice", out=sc["out"])


@pytest.mark.parametrize("cc", ["hp", "dcqcn", "timely", "dctcp"])
def test_every_reference_config_is_accepted(cc):
    net = NetworkSpec.from_hpcc_config(DATA / "dumbbell8" / cc / "config.txt")
    assert net.use_dynamic_pfc_threshold and net.global_t


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"cc": "cubic"}, "--cc"),
        ({"routing": "ecmp"}, "--routing"),
        ({"mode": "fluid"}, "--mode"),
    ],
)
def test_library_choices_raise_netsim_input_error(sc, kw, needle):
    with pytest.raises(NetsimInputError, match=needle):
        run_hpcc_scenario(sc["topology"], sc["flows"], sc["config"], **kw)


def test_flow_engine_refuses_a_self_flow_in_a_dag():
    from tests.netsim.conftest import dag_of, star
    from wormsim.netsim.flow.run import run_flow

    dag, _ = dag_of([(0, 1), (2, 2)], 1000)
    with pytest.raises(NetsimInputError, match="DAG node 3 .* from rank 2 to itself"):
        run_flow(dag, star(3), NetworkSpec())
    assert np.all(dag.src[1::2] >= 0)
