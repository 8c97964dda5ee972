"""examples/interop/: the files its README lists are there, and its commands run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.pipelines.conftest import invoke

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "examples" / "interop" / "README.md").read_text(encoding="utf-8")


def _commands() -> list[list[str]]:
    block = README.split("```bash", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("wormsim ")]


def test_every_file_the_commands_name_exists():
    paths = re.findall(r"examples/\S+", README.split("```bash", 1)[1])
    assert paths
    for p in paths:
        p = p.rstrip("`),")
        exists = (ROOT / p).exists() or (ROOT / p).with_name(Path(p).name + ".0.et").is_file()
        assert exists, p
    table = [line for line in README.split("## Commands", 1)[0].splitlines() if line[:3] == "| `"]
    assert len(table) >= 5
    for line in table:  # the first column names the file
        name = line.split("`")[1].replace("<rank>", "0")
        assert (ROOT / "examples" / "interop" / name).is_file(), name


@pytest.mark.parametrize("index", [2, 3])  # an AICB file without profiles, and Chakra traces
def test_the_flow_commands_run(tmp_path: Path, index: int, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = _commands()[index]
    assert "--mode" in args and args[args.index("--mode") + 1] == "flow"
    args[args.index("-o") + 1] = str(tmp_path / "run")
    r = invoke(*args, "--no-alone")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "run" / "inputs").is_dir()
