"""Small edges of the command line: ``-q`` after the command, readable usage lines, messages
without pydantic's prefixes, the output path named as given, a directory as the experiment."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from tests.pipelines.conftest import TINY, invoke
from wormsim.cli import app


def _commands(command: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, sub in getattr(command, "commands", {}).items():
        out += _commands(sub, (*prefix, name))
    return out


@pytest.mark.parametrize("path", _commands(typer.main.get_command(app))[1:], ids=" ".join)
def test_usage_lines_show_capitalised_metavars(path: tuple[str, ...]):
    r = CliRunner().invoke(app, [*path, "--help"])
    usage = next(line for line in r.output.splitlines() if "Usage:" in line)
    assert "{" not in usage and "}" not in usage, usage
    words = usage.split("[OPTIONS]")[-1].split()
    assert all(w.strip("[].") == w.strip("[].").upper() for w in words), usage


def test_the_usage_lines_users_read_most():
    def usage(*cmd: str) -> str:
        out = CliRunner().invoke(app, [*cmd, "--help"]).output
        return next(line for line in out.splitlines() if "Usage:" in line)

    assert usage("pipeline", "run").rstrip().endswith("[OPTIONS] [EXPERIMENT]")
    assert usage("analysis", "compare").rstrip().endswith("[OPTIONS] RUN_A RUN_B")
    assert usage("pipeline", "validate").rstrip().endswith("[OPTIONS] EXPERIMENT")


@pytest.fixture
def tiny_flow(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**TINY, "sim": {"mode": "flow"}}))
    return path


def test_quiet_is_accepted_after_the_command_as_before_it(tmp_path: Path, tiny_flow: Path):
    r = invoke("pipeline", "run", tiny_flow, "-o", tmp_path / "a", "-q", "--no-alone")
    assert r.exit_code == 0, r.output
    r = invoke("-q", "pipeline", "run", tiny_flow, "-o", tmp_path / "b", "--no-alone")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a" / "summary.json").is_file() and (tmp_path / "b").is_dir()


def test_an_unwritable_output_names_the_path_given(tiny_flow: Path):
    r = invoke("pipeline", "run", tiny_flow, "-o", "/proc/x")
    assert r.exit_code == 2 and "error: cannot create /proc/x" in r.output
    assert ".partial" not in r.output and "Traceback" not in r.output
    r = invoke("topology", "export", tiny_flow, "-o", "/proc/x")
    assert r.exit_code == 2 and "cannot write /proc/x" in r.output and ".tmp" not in r.output


def test_a_directory_as_the_experiment_says_it_is_a_directory(tmp_path: Path, tiny_flow: Path):
    r = invoke("pipeline", "run", tmp_path, "-o", tmp_path / "out")
    assert r.exit_code == 2 and f"{tmp_path} is a directory" in r.output
    assert "not found" not in r.output and not (tmp_path / "out").exists()
    run = tmp_path / "run"
    assert invoke("pipeline", "run", tiny_flow, "-o", run, "--no-alone").exit_code == 0
    r = invoke("pipeline", "validate", run)
    assert r.exit_code == 2 and str(run / "experiment.yaml") in r.output


def test_messages_carry_no_pydantic_prefix(tmp_path: Path):
    bad = tmp_path / "s.yaml"
    zipped = {"parallel.tp": [1, 2], "parallel.pp": [1]}
    bad.write_text(yaml.safe_dump({"name": "s", "experiment": TINY, "zip": zipped}))
    r = invoke("pipeline", "sweep", bad, "-o", tmp_path / "out")
    assert r.exit_code == 2 and "zip lists must have one length" in r.output
    r2 = invoke("netsim", "run", "--topology", tmp_path / "t", "--flows", tmp_path / "f",
                "-o", tmp_path / "o", "--mode", "wormhole", "--wormhole", "window=-5")  # fmt: skip
    for res in (r, r2):
        assert "Value error" not in res.output and "Traceback" not in res.output
