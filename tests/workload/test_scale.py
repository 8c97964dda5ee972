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
    # packet and Wormhole mode: the flow engine's row is not theirs
    assert "netsim" not in estimate_memory(big, "packet").stages


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
