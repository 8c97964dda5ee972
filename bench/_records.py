"""The markdown table a benchmark rewrites from its ``.jsonl`` record after every run."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["write_md", "append_rows"]


def write_md(jsonl: Path, md: Path, title: str, intro: str, cols: list[str]) -> None:
    """Rewrite ``md``: ``title``, ``intro``, then one row per record of ``jsonl`` in ``cols``."""
    rows = [json.loads(x) for x in jsonl.read_text().splitlines() if x.strip()]
    lines = [f"# {title}", "", intro, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    md.write_text("\n".join(lines) + "\n")


def append_rows(jsonl: Path, rows: list[dict]) -> None:
    """Append ``rows`` to the ``.jsonl`` record (its folder made if needed)."""
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    with jsonl.open("a") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
