"""Rendering tables for people: polars frames and mappings to rich tables in one style.

Every cell goes through :func:`wormsim.analysis.units.format_value`, which reads the unit from
the column's suffix (``_us``, ``_bytes``, ``_pct``, ``_GBps``, ``_x``, ...) and writes the value
in the unit that reads best, the unit included (``'48.6 ms'``, ``'1.50 MiB'``, ``'12.3 %'``).
The header is therefore the bare name, the unit suffix dropped (``duration_us`` -> ``duration``).
Columns without a known suffix are printed as numbers or text, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from rich import box
from rich.console import Console
from rich.table import Table

from wormsim.analysis import units
from wormsim.analysis.units import human_bytes

__all__ = [
    "BOX",
    "frame_table",
    "mapping_table",
    "markdown_table",
    "human_bytes",
    "header",
    "print_tables",
]

#: The one box style of every wormsim table.
BOX = box.SIMPLE_HEAVY


def header(col: str) -> str:
    """The column header people see: the name without its unit suffix, underscores as spaces
    (``duration_us`` -> ``duration``, ``critical_rank_us`` -> ``critical rank``), since every
    cell carries its unit; a share in % keeps a ``%`` so it stands apart from the time it is a
    share of (``critical_rank_pct`` -> ``critical rank %``). Labels and unknown names unchanged.
    """
    if col in units.LABEL_COLUMNS or not units.has_unit(col):
        return col
    for suf in sorted(units.UNIT_SUFFIXES, key=len, reverse=True):
        if col.endswith(suf) and len(col) > len(suf):
            name = col[: -len(suf)].replace("_", " ")
            return f"{name} %" if suf == "_pct" else name
    return col


def _table(title: str | None, show_header: bool = True) -> Table:
    return Table(title=title, box=BOX, show_header=show_header, title_justify="left")


def frame_table(df: pl.DataFrame, title: str | None = None) -> Table:
    """A rich table of a polars frame, every cell humanised by its column's unit suffix."""
    table = _table(title)
    for col in df.columns:
        numeric = df[col].dtype.is_numeric()
        table.add_column(header(col), justify="right" if numeric else "left")
    for row in df.iter_rows():
        table.add_row(*(units.format_value(c, v) for c, v in zip(df.columns, row, strict=True)))
    return table


def mapping_table(data: Mapping[str, Any], title: str | None = None) -> Table:
    """A two-column table of key/value pairs; each value humanised by its key's unit suffix."""
    table = _table(title, show_header=False)
    table.add_column("key")
    table.add_column("value", justify="right")
    for k, v in data.items():
        table.add_row(header(k), units.format_value(k, v))
    return table


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pl.DataFrame | Mapping[str, Any]) -> str:
    """The same table as GitHub-flavoured Markdown (a mapping becomes a key/value table)."""
    if not isinstance(df, pl.DataFrame):
        rows = [(header(k), units.format_value(k, v)) for k, v in df.items()]
        lines = ["| | |", "|---|---:|"]
        return "\n".join(lines + [f"| {_md(k)} | {_md(v)} |" for k, v in rows]) + "\n"
    heads = [header(c) for c in df.columns]
    align = ["---:" if df[c].dtype.is_numeric() else "---" for c in df.columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join(align) + "|"]
    for row in df.iter_rows():
        cells = (units.format_value(c, v) for c, v in zip(df.columns, row, strict=True))
        lines.append("| " + " | ".join(_md(x) for x in cells) + " |")
    return "\n".join(lines) + "\n"


def print_tables(*tables: Table, console: Console | None = None) -> None:
    """Print tables to stdout."""
    console = console or Console()
    for t in tables:
        console.print(t)
