"""Shared fixtures of the pipeline tests: a tiny experiment that runs in seconds."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from wormsim.cli import app

TINY = {
    "name": "tiny",
    "model": {
        "num_layers": 4,
        "hidden_size": 256,
        "num_heads": 8,
        "vocab_size": 64,
        "seq_length": 128,
    },
    "parallel": {"tp": 4, "pp": 2, "global_batch": 4},
    "cluster": {"gpus": 16, "gpus_per_node": 4},
}


def invoke(*args: object):
    """Run the `wormsim` command in-process with the arguments as strings."""
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """The tiny experiment as a YAML file."""
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return path
