"""The experiment file: loading, overrides, validation messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wormsim.errors import ConfigError
from wormsim.experiment import (
    ExperimentConfig,
    apply_overrides,
    config_hash,
    dump_yaml,
    load_experiment,
    parse_experiment,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

MINIMAL = {"model": "gpt3-125m", "cluster": {"gpus": 8}, "parallel": {"tp": 4}}


def test_yaml_toml_json_load_alike(tmp_path):
    (tmp_path / "e.json").write_text(json.dumps(MINIMAL))
    (tmp_path / "e.yaml").write_text("model: gpt3-125m\ncluster: {gpus: 8}\nparallel: {tp: 4}\n")
    (tmp_path / "e.toml").write_text(
        'model = "gpt3-125m"\n[cluster]\ngpus = 8\n[parallel]\ntp = 4\n'
    )
    cfgs = [load_experiment(tmp_path / f"e.{s}") for s in ("json", "yaml", "toml")]
    assert cfgs[0] == cfgs[1] == cfgs[2]
    assert cfgs[0].model.num_layers == 12


def test_resolved_yaml_round_trips(tmp_path):
    cfg = parse_experiment(MINIMAL)
    path = tmp_path / "resolved.yaml"
    path.write_text(dump_yaml(cfg))
    again = load_experiment(path)
    assert again == cfg
    assert config_hash(again) == config_hash(cfg)


def test_overrides_reach_nested_fields_and_presets():
    data = apply_overrides(MINIMAL, ["parallel.tp=2", "model.seq_length=1024", "sim.mode=flow"])
    cfg = parse_experiment(data)
    assert cfg.parallel.tp == 2
    assert cfg.model.seq_length == 1024 and cfg.model.num_layers == 12  # preset kept
    assert cfg.sim.mode == "flow"


@pytest.mark.parametrize(
    "data,fragment",
    [
        ({**MINIMAL, "model": "gpt-9000"}, "unknown model preset 'gpt-9000'"),
        ({**MINIMAL, "parallel": {"tp": 5}}, "must divide model.num_heads"),
        ({**MINIMAL, "cluster": {"gpus": 6}}, "cluster.gpus"),
        ({**MINIMAL, "parallel": {"tp": 4, "pp": 4}}, "not divisible"),
        ({**MINIMAL, "parallel": {"tp": 4, "dp": 4}}, "world size mismatch"),
        ({**MINIMAL, "parallel": {"tp": -2}}, "parallel.tp"),
        ({**MINIMAL, "model": {"preset": "gpt3-125m", "hidden_size": -5}}, "model.hidden_size"),
        ({**MINIMAL, "parallel": {"tp": 4, "tensor": 2}}, "parallel.tensor: unknown key"),
        ({**MINIMAL, "colour": "red"}, "colour: unknown key"),
        ({"model": "gpt3-125m"}, "cluster: required"),
    ],
)
def test_bad_input_names_the_field(data, fragment):
    with pytest.raises(ConfigError) as err:
        parse_experiment(data)
    assert fragment in str(err.value)


def test_malformed_files(tmp_path):
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("model: [unclosed\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_experiment(bad_yaml)
    with pytest.raises(ConfigError, match="not found"):
        load_experiment(tmp_path / "missing.yaml")
    other = tmp_path / "e.ini"
    other.write_text("x")
    with pytest.raises(ConfigError, match="unknown file type"):
        load_experiment(other)
    with pytest.raises(ConfigError, match="write it as KEY=VALUE"):
        apply_overrides(MINIMAL, ["parallel.tp"])


def test_every_example_is_valid():
    # examples/dse holds sweep files (tests/pipelines/test_sweep.py checks them)
    files = sorted(f for f in EXAMPLES.rglob("*.yaml") if "dse" not in f.parts)
    assert len(files) >= 8
    for f in files:
        cfg = load_experiment(f)
        assert isinstance(cfg, ExperimentConfig)


def test_table1_examples_match_the_paper():
    want = {
        "gpt7b-64": (64, 8, 4, 2, 1),
        "gpt13b-128": (128, 8, 4, 4, 1),
        "gpt22b-256": (256, 8, 8, 4, 1),
        "gpt175b-1024": (1024, 8, 16, 8, 1),
        "moe8x7b-64": (64, 8, 4, 2, 8),
        "moe8x13b-128": (128, 8, 4, 4, 8),
        "moe8x22b-256": (256, 8, 8, 4, 8),
        "moe32x22b-1024": (1024, 8, 16, 8, 8),
    }
    for name, (gpus, tp, dp, pp, ep) in want.items():
        cfg = load_experiment(EXAMPLES / "table1" / f"{name}.yaml")
        p = cfg.parallel
        assert (cfg.cluster.gpus, p.tp, p.dp, p.pp, p.ep) == (gpus, tp, dp, pp, ep)
        assert p.micro_batch == 1 and p.global_batch == dp * pp


def test_a_bug_inside_validation_is_not_reported_as_bad_input(monkeypatch):
    """Only pydantic's ValidationError is the user's; any other ValueError is a bug in wormsim
    and keeps its traceback (no ``error: …``, no exit 2)."""

    def buggy(cls, data):
        raise ValueError("internal bug")

    monkeypatch.setattr(ExperimentConfig, "model_validate", classmethod(buggy))
    with pytest.raises(ValueError, match="internal bug") as err:
        parse_experiment(MINIMAL)
    assert not isinstance(err.value, ConfigError)
