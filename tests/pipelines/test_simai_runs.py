"""Training runs on SimAI topology files and SimAI.conf, and the one-command SimAI triple
(``wormsim pipeline run --workload W --topology T --config SimAI.conf -o RUN``)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

import wormsim
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.formats.hpcc_io import write_topology

from .conftest import invoke

SIMAI = Path(__file__).resolve().parents[1] / "data" / "simai"
AICB = Path(__file__).resolve().parents[1] / "data" / "aicb"
SPECTRUM = SIMAI / "Spectrum-X_128g_8gps_400Gbps_H100"
HPN = SIMAI / "AlibabaHPN_64g_8gps_DualToR_SinglePlane_200Gbps_H100"
DCN = SIMAI / "DCN+SingleToR_128g_8gps_400Gbps_H100"
CONF = SIMAI / "SimAI.conf"

_SMALL = {"num_layers": 2, "hidden_size": 256, "num_heads": 8, "vocab_size": 64,
          "seq_length": 64}  # fmt: skip
GPT = {"model": _SMALL, "parallel": {"tp": 8, "pp": 2, "global_batch": 8}}
MOE = {
    "model": {**_SMALL, "num_experts": 8, "moe_top_k": 2},
    "parallel": {"tp": 8, "pp": 2, "ep": 8, "etp": 1, "global_batch": 8,
                 "sequence_parallel": True},
}  # fmt: skip


def _flows(run: Path) -> pl.DataFrame:
    return pl.read_parquet(run / "flows.parquet")


@pytest.mark.parametrize("workload", [GPT, MOE], ids=["gpt", "moe"])
@pytest.mark.parametrize("topo", [SPECTRUM, HPN, DCN], ids=["spectrum-x", "hpn", "dcn+"])
def test_gpt_and_moe_run_end_to_end_on_simai_templates(tmp_path: Path, topo: Path, workload):
    exp = {**workload, "cluster": {"topology_file": str(topo)}, "network": str(CONF),
           "sim": {"mode": "flow"}}  # fmt: skip
    run = wormsim.run(exp, out=tmp_path / "run", alone=False)
    cfg = yaml.safe_load((tmp_path / "run" / "experiment.yaml").read_text())
    gpus = 64 if topo == HPN else 128
    assert cfg["cluster"]["gpus"] == gpus and cfg["cluster"]["gpus_per_node"] == 8
    assert cfg["network"]["cc"] == "dcqcn"  # SimAI.conf's CC_MODE 1
    assert run.iteration_time_s > 0
    flows = _flows(tmp_path / "run")
    # traffic crosses the fabric (PP and DP leave the server) and stays on the file's GPUs
    assert (flows["src"] // 8 != flows["dst"] // 8).any()
    assert flows["src"].max() < gpus and flows["dst"].max() < gpus
    if topo == HPN:  # dual ToR: ECMP spreads the GPUs' connections over both NIC ports
        nic = run.links.filter((pl.col("node") < gpus) & (pl.col("payload_bytes") > 0))
        ports = nic.group_by("node").len()["len"]
        # a connection (one QP) keeps one port, so a GPU with few connections may use one;
        # over the GPUs that send across the fabric both ports carry traffic
        assert ports.max() == 2 and (ports <= 2).all()
        assert (ports == 2).sum() >= ports.len() // 4
    if workload is MOE:  # etp 1: an EP group is one server, so its all-to-all stays on NVLink
        ep = flows.filter(pl.col("group") == "ep")
        assert ep.height > 0 and (ep["src"] // 8 == ep["dst"] // 8).all()


def _spectrum_as_builtin() -> dict:
    """The built-in rail-optimized fabric equal to the Spectrum-X file: 16 servers in one pod,
    a 400 Gbps leaf per rail, 8 spines (2:1), 500 ns links, 2880 Gbps NVLink."""
    return {"gpus": 128, "gpus_per_node": 8, "topology": "rail_optimized",
            "host_link_gbps": 400, "fabric_link_gbps": 400, "link_delay_ns": 500,
            "oversubscription": 2, "hosts_per_leaf": 16, "nvlink_gbps": 2880}  # fmt: skip


def test_a_simai_file_equal_to_a_builtin_fabric_gives_the_same_iteration(tmp_path: Path):
    base = {**GPT, "network": str(CONF), "sim": {"mode": "packet"}}
    builtin = wormsim.run({**base, "cluster": _spectrum_as_builtin()}, alone=False)
    from_file = wormsim.run({**base, "cluster": {"topology_file": str(SPECTRUM)}}, alone=False)
    assert from_file.iteration_time_s == builtin.iteration_time_s
    assert from_file.flows["fct_ps"].to_list() == builtin.flows["fct_ps"].to_list()


def test_an_hpcc_file_of_a_builtin_fabric_gives_the_same_iteration(tmp_path: Path):
    cluster = {"gpus": 32, "gpus_per_node": 8, "topology": "clos", "hosts_per_leaf": 8,
               "oversubscription": 2}  # fmt: skip
    write_topology(build_topology(ClusterSpec(**cluster)), tmp_path / "topology.txt")
    exp = {**GPT, "sim": {"mode": "packet"}, "network": {"cc": "hpcc"}}
    exp["parallel"] = {"tp": 8, "pp": 2, "global_batch": 4}
    builtin = wormsim.run({**exp, "cluster": cluster}, alone=False)
    file_cluster = {"topology_file": str(tmp_path / "topology.txt"), "gpus_per_node": 8}
    from_file = wormsim.run({**exp, "cluster": file_cluster}, alone=False)
    assert from_file.iteration_time_s == builtin.iteration_time_s


def test_the_simai_triple_is_one_command(tmp_path: Path):
    """SimAI's own microAllReduce.txt (8 GPUs) on a 64-GPU template, with SimAI.conf."""
    out = tmp_path / "run"
    r = invoke("pipeline", "run", "--workload", SIMAI / "microAllReduce.txt",
               "--topology", HPN, "--config", CONF, "-o", out, "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    cfg = yaml.safe_load((out / "experiment.yaml").read_text())
    assert cfg["cluster"]["gpus"] == 8  # the first server of the 64 GPUs
    # the run keeps a copy of its topology and names it (self-contained run directories)
    assert cfg["cluster"]["topology_file"] == f"inputs/{HPN.name}"
    assert (out / "inputs" / HPN.name).read_bytes() == HPN.read_bytes()
    assert cfg["network"]["payload_size_bytes"] == 9000
    man = json.loads((out / "manifest.json").read_text())
    assert man["imported_from"]["format"] == "aicb"
    assert any(o.startswith("network=") for o in man["overrides"])
    ops = pl.read_parquet(out / "ops.parquet")
    sizes = sorted(ops.filter(pl.col("kind") == "comm")["size_bytes"].unique().to_list())
    assert sizes == [16777216, 67108864]  # the file's two all-reduces
    # packet mode (the default): SimAI.conf's RATE_MON_FILE / QLEN_MON_FILE are sampled
    assert (out / "rate_samples.parquet").exists() and (out / "queue_samples.parquet").exists()


def test_aicb_moe_file_runs_on_a_simai_topology(tmp_path: Path):
    r = invoke("pipeline", "run", "--workload", AICB / "moe8x13b-tp8-ep8-pp2-64.txt",
               "--topology", HPN, "--config", CONF, "--mode", "flow", "--no-alone",
               "-o", tmp_path / "run")  # fmt: skip
    assert r.exit_code == 0, r.output


def test_an_experiment_file_names_its_files_relative_to_itself(tmp_path: Path):
    (tmp_path / "T").write_bytes(DCN.read_bytes())
    (tmp_path / "SimAI.conf").write_bytes(CONF.read_bytes())
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({**GPT, "cluster": {"topology_file": "T"},
                                   "network": "SimAI.conf"}))  # fmt: skip
    r = invoke("pipeline", "validate", exp)
    assert r.exit_code == 0, r.output
    cfg = yaml.safe_load(r.output)
    assert cfg["cluster"]["topology_file"] == str((tmp_path / "T").resolve())
    assert cfg["cluster"]["gpus"] == 128 and cfg["network"]["cc"] == "dcqcn"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--set", "cluster.gpus_per_node=4"], "cluster.gpus_per_node is 4 but"),
        (["--set", "cluster.gpus=256"], "has only 64 GPUs"),
        ([], "has 200 Gbps links: KMIN_MAP has no entry for link speed 200000000000 bps"),
    ],
)
def test_a_cluster_the_topology_file_contradicts_is_refused(tmp_path: Path, args, match):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump(GPT))
    config = ["--config", CONF] if args else []  # the default network has no 200 Gbps ECN
    r = invoke("pipeline", "run", exp, "--topology", HPN, *config, *args,
               "-o", tmp_path / "run")  # fmt: skip
    assert r.exit_code == 2
    assert match in r.output and "Traceback" not in r.output
    assert not (tmp_path / "run").exists()


def test_bad_topology_and_config_files_exit_2_with_file_and_line(tmp_path: Path):
    bad = tmp_path / "T"
    bad.write_text(SPECTRUM.read_text().replace("0 144 400Gbps", "0 144 fastGbps", 1))
    r = invoke("pipeline", "run", "--workload", SIMAI / "microAllReduce.txt",
               "--topology", bad, "-o", tmp_path / "run")  # fmt: skip
    assert r.exit_code == 2 and f"{bad.resolve()}:4: cannot parse the data rate" in r.output
    conf = tmp_path / "SimAI.conf"
    conf.write_text(CONF.read_text() + "\nPAUSE_TIME 5\n")
    r = invoke("pipeline", "run", "--workload", SIMAI / "microAllReduce.txt",
               "--topology", SPECTRUM, "--config", conf, "-o", tmp_path / "run")  # fmt: skip
    assert r.exit_code == 2 and "SimAI.conf:" in r.output and "(PAUSE_TIME)" in r.output
    assert not (tmp_path / "run").exists()


def test_run_needs_an_experiment_or_a_workload(tmp_path: Path):
    r = invoke("pipeline", "run", "--topology", SPECTRUM, "-o", tmp_path / "run")
    assert r.exit_code == 2 and "give an experiment file, or a workload" in r.output


def test_an_astra_sim_trace_is_one_command_too(tmp_path: Path):
    trace = Path(__file__).resolve().parents[1] / "data" / "chakra" / "dlrm_hybrid_8npus" / "dlrm"
    out = tmp_path / "run"
    r = invoke("pipeline", "run", "--workload", trace, "--topology", SPECTRUM, "--config", CONF,
               "--mode", "flow", "--no-alone", "-o", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    man = json.loads((out / "manifest.json").read_text())
    assert man["imported_from"] == {"format": "chakra", "path": str(trace)}
    cfg = yaml.safe_load((out / "experiment.yaml").read_text())
    assert cfg["cluster"]["gpus"] == 8 and cfg["parallel"]["dp"] == 8


def test_help_names_the_new_options():
    r = invoke("pipeline", "run", "--help")
    assert r.exit_code == 0
    for option in ("--workload", "--topology", "--config"):
        assert option in r.output
    for command in ("import", "export"):
        r = invoke("workload", command, "--help")
        assert r.exit_code == 0 and "chakra" in r.output


def test_missing_files_exit_2_naming_them(tmp_path: Path):
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({**GPT, "cluster": {"topology_file": "nope"}}))
    r = invoke("pipeline", "run", exp, "-o", tmp_path / "run")
    assert r.exit_code == 2 and f"topology file {tmp_path / 'nope'}" in r.output
    exp.write_text(yaml.safe_dump({**GPT, "cluster": {"gpus": 16}, "network": "none.conf"}))
    r = invoke("pipeline", "run", exp, "-o", tmp_path / "run")
    assert r.exit_code == 2 and "none.conf" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "run").exists()
