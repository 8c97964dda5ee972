"""The README is a user guide: short, in the order a new user needs it, measurements in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SETUP = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && "
    ".venv/bin/wormsim pipeline run examples/default.yaml -o runs/default"
)
TEST = ".venv/bin/python -m pytest -q"


def _sections() -> list[str]:
    return [line[3:] for line in README.splitlines() if line.startswith("## ")]


def test_it_is_short():
    words = len(README.split())
    assert words < 1500, f"{words} words"


def test_quick_start_comes_first_with_the_one_setup_and_the_one_test_command():
    assert _sections()[0] == "Quick start"
    first_block = README.split("```bash", 1)[1].split("```", 1)[0]
    assert SETUP in first_block.splitlines()
    assert TEST in first_block.splitlines()


def test_the_sections_a_user_looks_for():
    for title in (
        "What it answers",
        "Run your own experiment",
        "Sweeps",
        "Python",
        "Coming from SimAI / ASTRA-sim",
        "Documentation",
    ):
        assert title in _sections()
    assert "![" in README  # one plot
    coming = README.split("## Coming from SimAI / ASTRA-sim", 1)[1].split("\n## ", 1)[0]
    # the one command each: SimAI's triple and ASTRA-sim's traces, and the guide
    assert "docs/interop.md" in coming
    assert "wormsim pipeline run --workload" in coming and "--topology" in coming
    assert "--config SimAI.conf" in coming and "--format chakra" in coming


def test_measurement_tables_and_their_history_live_in_docs():
    assert "ENGINE_MODEL" not in README and "events skipped" not in README
    tables = [line for line in README.splitlines() if line.startswith("|")]
    assert len(tables) <= 8  # the exit-status table only
    for doc in ("docs/performance.md", "docs/fidelity.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert "2026-12-03" in text and re.search(r"commit `[0-9a-f]{7}`", text)
    assert (ROOT / "CHANGELOG.md").is_file()


def test_every_link_resolves():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if target.startswith("http") or target == "docs/interop.md":  # interop: in progress
            continue
        assert (ROOT / target).exists(), target
