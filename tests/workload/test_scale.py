"""The memory estimate of a run and its refusal when the run cannot fit (issue 43)."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from tests.hostile import assert_rejected, invoke
from wormsim.experiment import load_experiment
from wormsim.workload import scale as scale_mod
from wormsim.workload.errors import WorkloadError
from wormsim.workload.scale import (
    ADDRESS_SPACE_RESERVE,
    MEMORY_ENV,
    available_memory,
    check_memory,
    estimate_memory,
    estimate_scale,
)

GPT175B = Path(__file__).resolve().parents[2] / "examples" / "table1" / "gpt175b-1024.yaml"


def _scale(gpus: int):
    dp = gpus // 64
    cfg = load_experiment(
        GPT175B, [f"cluster.gpus={gpus}", f"parallel.dp={dp}", f"parallel.global_batch={dp * 8}"]
    )
    c = cfg.cluster
    return estimate_scale(
        cfg.model, cfg.parallel, cfg.hardware, c.gpus, c.gpus_per_node, cfg.collective,
        c.host_link_gbps,
    )  # fmt: skip


def test_the_estimate_counts_flows_and_grows_with_the_cluster():
    small, big = _scale(512), _scale(2048)
    assert 0 < small.flows < small.dag_nodes and 0 < big.flows < big.dag_nodes
    a, b = estimate_memory(small, "flow"), estimate_memory(big, "flow")
    assert 0 < a.peak_bytes < b.peak_bytes
    assert a.peak_bytes == max(a.stages.values()) and a.stage in a.stages
    # packet and Wormhole mode: the flow engine's row is not theirs; without their engine's
    # bytes the estimate leaves netsim out
    assert "netsim" not in estimate_memory(big, "packet").stages


T1 = GPT175B.parent


@pytest.mark.parametrize(
    ("experiment", "items"),
    [
        ("gpt7b-64.yaml", []),
        ("gpt7b-64.yaml", ["parallel.tp=4", "parallel.dp=8", "parallel.global_batch=16"]),
        ("moe8x7b-64.yaml", []),  # all-to-all over expert-parallel ranks
    ],
)
def test_fabric_flows_are_counted_exactly_as_the_packet_engine_makes_qps(
    tmp_path, experiment, items
):
    """The estimate of the flows between servers, made before anything is built, is the number
    of QPs the packet engine makes from the built DAG (one per fabric flow)."""
    from wormsim.collective.dag import dag_to_arrays
    from wormsim.collective.stage import stage_collective
    from wormsim.experiment import init_run_dir
    from wormsim.netsim.common.flow_plan import plan_flows
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.workload.stage import stage_workload

    cfg = load_experiment(T1 / experiment, items)
    c = cfg.cluster
    est = estimate_scale(
        cfg.model, cfg.parallel, cfg.hardware, c.gpus, c.gpus_per_node, cfg.collective,
        c.host_link_gbps,
    )  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    init_run_dir(cfg, run, items)
    stage_workload(cfg, run)
    dag = dag_to_arrays(stage_collective(run, cfg))
    qps = plan_flows(dag, build_topology(cfg.cluster), routing="hash", seed=0).n_qps
    assert 0 < est.fabric_flows <= est.flows
    assert abs(est.fabric_flows - qps) <= 0.02 * qps, (est.fabric_flows, qps)


def test_packet_and_wormhole_estimates_count_the_engine_state_from_its_field_table():
    """With the engine's bytes (from its field table: one QP per fabric flow, the sampler's
    window by the congestion control) the netsim stage is estimated; Wormhole's state is larger
    than packet mode's, and DCQCN's longer window larger still."""
    from wormsim.netsim.network_config import NetworkSpec
    from wormsim.netsim.packet.run import engine_bytes
    from wormsim.netsim.wormhole.spec import WormholeSpec

    s = _scale(1024)
    packet = engine_bytes(NetworkSpec(cc="hpcc"))
    hpcc = engine_bytes(NetworkSpec(cc="hpcc"), WormholeSpec())
    dcqcn = engine_bytes(NetworkSpec(cc="dcqcn"), WormholeSpec())
    assert 0 < packet.per_qp < hpcc.per_qp < dcqcn.per_qp and packet.per_node == hpcc.per_node
    a, b = estimate_memory(s, "packet", packet), estimate_memory(s, "wormhole", hpcc)
    assert 0 < a.stages["netsim"] < b.stages["netsim"]
    extra = s.fabric_flows * (hpcc.per_qp - packet.per_qp)
    assert abs(b.stages["netsim"] - a.stages["netsim"] - extra) <= 1
    # GPT-175B on 4,096 GPUs in Wormhole mode: the engine's state is the peak
    big = estimate_memory(_scale(4096), "wormhole", hpcc)
    assert big.stage == "netsim" and big.peak_bytes > 15e9


def test_a_run_that_fits_is_allowed_and_one_that_does_not_is_refused(monkeypatch):
    s = _scale(1024)
    need = estimate_memory(s, "flow").peak_bytes
    monkeypatch.setenv(MEMORY_ENV, str(need + 1))
    assert check_memory(s, "flow").peak_bytes == need
    monkeypatch.setenv(MEMORY_ENV, str(need - 1))
    with pytest.raises(WorkloadError) as err:
        check_memory(s, "flow")
    text = str(err.value)
    assert "\n" not in text
    for needle in ("GB", MEMORY_ENV, "cluster.gpus", "peak in", "available"):
        assert needle in text, text


@pytest.mark.parametrize(("value", "expected"), [("8G", 8 * 2**30), ("512M", 512 * 2**20)])
def test_the_memory_setting_takes_sizes(monkeypatch, value, expected):
    monkeypatch.setenv(MEMORY_ENV, value)
    assert available_memory() == (expected, MEMORY_ENV)


def test_the_machine_memory_and_the_address_space_limit_are_seen(monkeypatch):
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    avail, source = available_memory()
    assert avail is None or avail > 0
    cap = ADDRESS_SPACE_RESERVE + 2**30
    monkeypatch.setattr(scale_mod.resource, "getrlimit", lambda _: (cap, resource.RLIM_INFINITY))
    avail, source = available_memory()
    assert avail <= 2**30
    if source == "ulimit -v":
        assert avail == 2**30


def test_a_run_too_big_for_the_memory_exits_2_at_once_writing_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "1G")
    out = tmp_path / "run"
    t0 = time.perf_counter()
    r = invoke("pipeline", "run", GPT175B, "-o", out, "--mode", "flow")
    assert time.perf_counter() - t0 < 30
    text = assert_rejected(r, "GB", "1.07 GB is available", MEMORY_ENV, "cluster.gpus", out=out)
    assert len([line for line in text.splitlines() if line.startswith("error:")]) == 1


def test_a_bad_memory_setting_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "lots")
    out = tmp_path / "run"
    r = invoke("pipeline", "run", GPT175B, "-o", out, "--mode", "flow")
    assert_rejected(r, MEMORY_ENV, "'lots'", out=out)
