"""Rendering tables for people: polars frames to rich tables, with units made readable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from rich.console import Console
from rich.table import Table

__all__ = ["frame_table", "mapping_table", "human_bytes", "print_tables"]


def human_bytes(n: float) -> str:
    """``1536`` -> ``'1.50 KiB'``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError


def _cell(col: str, value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if col.endswith("_bytes") or col.endswith("bytes_per_rank"):
            return human_bytes(value)
        return f"{value:.6g}"
    if isinstance(value, int) and (col.endswith("_bytes") or col.endswith("bytes_per_rank")):
        return human_bytes(value)
    return str(value)


def frame_table(df: pl.DataFrame, title: str | None = None) -> Table:
    """A rich table of a polars frame (byte columns shown in KiB/MiB/GiB)."""
    table = Table(title=title)
    for col in df.columns:
        numeric = df[col].dtype.is_numeric()
        table.add_column(col, justify="right" if numeric else "left")
    for row in df.iter_rows():
        table.add_row(*(_cell(c, v) for c, v in zip(df.columns, row, strict=True)))
    return table


def mapping_table(data: Mapping[str, Any], title: str | None = None) -> Table:
    """A two-column rich table of key/value pairs."""
    table = Table(title=title, show_header=False)
    table.add_column("key")
    table.add_column("value", justify="right")
    for k, v in data.items():
        table.add_row(k, _cell(k, v))
    return table


def print_tables(*tables: Table, console: Console | None = None) -> None:
    """Print tables to stdout."""
    console = console or Console()
    for t in tables:
        console.print(t)
