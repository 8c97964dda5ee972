"""Hostile experiment files and overrides: ``error: …`` naming file or field, exit 2, no run dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.hostile import assert_rejected, invoke
from tests.pipelines.conftest import TINY
from wormsim.experiment import MAX_DEPTH, ExperimentConfig, load_experiment
from wormsim.workload.scale import MAX_DAG_NODES, MAX_OPS, estimate_scale

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "table1"


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return path


def _billion_laughs() -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join([*lines, "model: *a8"]) + "\n"


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("bomb.yaml", _billion_laughs(), "expands to more than"),
        ("deep.yaml", "model: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than"),
        ("deep.json", '{"model": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("deep2.json", '{"model": ' + "[" * 200 + "]" * 200 + "}", "nested more than"),
        ("deep.toml", "model = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("big.yaml", "name: x\n" + "#" * (2 << 20) + "\n", "over the limit"),
    ],
)
def test_hostile_documents_are_refused_naming_the_file(tmp_path, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    assert len(text) < 5_000_000 and len(_billion_laughs()) < 1024
    out = tmp_path / "run"
    assert_rejected(invoke("pipeline", "run", path, "-o", out), str(path), needle, out=out)


def test_non_utf8_experiment_names_file_and_line(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_bytes(b"name: x\nmodel: gpt\xff-13b\n")
    out = tmp_path / "run"
    assert_rejected(invoke("workload", "build", path, "-o", out), f"{path}:2", "UTF-8", out=out)


def test_modest_nesting_is_fine(tmp_path):
    path = tmp_path / "ok.json"
    doc = dict(TINY, hardware={"kernel_times_us": {"attn_fwd": 10.0}})
    path.write_text(json.dumps(doc))
    assert load_experiment(path).hardware.kernel_times_us == {"attn_fwd": 10.0}
    assert MAX_DEPTH >= 8


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        ("model.seq_length=1e15", ("model.seq_length", "1e15")),
        ("model.seq_length=1000000000000000", ("model.seq_length", "1000000000000000")),
        ("hardware.efficiency=1e-15", ("hardware.efficiency", "days")),
        ("hardware.efficiency=.nan", ("hardware.efficiency", "finite")),
        ("hardware.kernel_times_us={attn_fwd: 1e30}", ("kernel_times_us.attn_fwd",)),
        ("cluster.gpus=1000000000", ("cluster.gpus", "1000000000")),
        ("parallel.global_batch=100000000", ("ops", "over the limit", "global_batch")),
        ("cluster.host_link_gbps=1e30", ("cluster.host_link_gbps",)),
        ("cluster.host_link_gbps=25", ("cluster.host_link_gbps", "KMIN_MAP", "network.kmin_kb")),
        ("network.rate_ai_bps=.inf", ("network.rate_ai_bps",)),
        ("network.use_dynamic_pfc_threshold=false", ("static PFC thresholds",)),
        ("collective.p2p_chunk_bytes=1", ("collective.p2p_chunk_bytes",)),
        ("parallel.seed=100000000000000000000000", ("parallel.seed",)),
    ],
)
def test_out_of_range_overrides_name_the_field(tmp_path, tiny, override, needles):
    out = tmp_path / "run"
    r = invoke("pipeline", "run", tiny, "-o", out, "--set", override)
    assert_rejected(r, *needles, out=out)


def test_too_many_gpus_for_the_op_limit_is_refused_with_the_estimate(tmp_path, tiny):
    out = tmp_path / "run"
    r = invoke(
        "workload", "build", tiny, "-o", out,
        "--set", "cluster.gpus=1048576", "--set", "parallel.global_batch=2097152",
    )  # fmt: skip
    assert_rejected(r, "ops", f"{MAX_OPS:,}", out=out)


def test_gpt175b_on_1024_gpus_at_full_batch_is_allowed():
    cfg = load_experiment(EXAMPLES / "gpt175b-1024.yaml", ["parallel.global_batch=1024"])
    c = cfg.cluster
    s = estimate_scale(
        cfg.model, cfg.parallel, cfg.hardware, c.gpus, c.gpus_per_node, cfg.collective
    )
    assert 10_000_000 < s.ops < MAX_OPS and 16_000_000 < s.dag_nodes < MAX_DAG_NODES


def test_every_experiment_field_is_documented():
    schema = ExperimentConfig.model_json_schema()
    missing = [
        f"{model}.{name}"
        for model, body in [("ExperimentConfig", schema), *schema["$defs"].items()]
        if model not in ("SimSpec", "WormholeSpec")
        for name, prop in body.get("properties", {}).items()
        if not prop.get("description")
    ]
    assert not missing, missing


def test_flow_skips_under_timely_are_refused_naming_the_fields(tmp_path, tiny):
    out = tmp_path / "run"
    sets = ("sim.mode=wormhole", "sim.wormhole.skip_unit=flow", "network.cc=timely")
    r = invoke("pipeline", "run", tiny, "-o", out, *(x for s in sets for x in ("--set", s)))
    assert_rejected(r, "sim.wormhole.skip_unit", "network.cc = timely", out=out)
