"""`analysis.tables`: one style, every cell in human units, headers without the unit suffix."""

from __future__ import annotations

import polars as pl
import pytest
from rich.console import Console

from wormsim.analysis import units
from wormsim.analysis.tables import BOX, frame_table, header, human_bytes, mapping_table


def _text(table) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    return console.export_text()


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.50 KiB"),
        (3 * 2**20, "3.00 MiB"),
        (2**40, "1.00 TiB"),
    ],
)
def test_human_bytes_is_binary_prefixes(n, shown):
    assert human_bytes(n) == shown
    assert units.format_value("size_bytes", n) == shown  # one implementation for both


def test_header_drops_the_unit_suffix_but_not_labels():
    assert header("duration_us") == "duration"
    assert header("busbw_GBps") == "busbw"
    assert header("exposed_dp_pct") == "exposed dp %"
    assert header("critical_rank_us") == "critical rank"
    assert header("total_bytes") == "total"
    assert header("flow_id") == "flow_id"  # a label
    assert header("ops") == "ops"  # no unit: unchanged


def test_frame_table_cells_carry_their_units():
    df = pl.DataFrame(
        {
            "group": ["dp", "tp"],
            "duration_us": [1500.0, 2.0],
            "total_bytes": [3 * 2**20, 512],
            "busbw_GBps": [23.456, 1.0],
            "share_pct": [12.345, 87.655],
            "speedup_x": [4.0, 0.5],
        }
    )
    table = frame_table(df, title="t")
    assert table.box is BOX
    assert [c.header for c in table.columns] == [
        "group",
        "duration",
        "total",
        "busbw",
        "share %",
        "speedup",
    ]
    text = _text(table)
    # 1500 µs is 1.50 ms; 3 MiB; percent and GB/s with their units
    for shown in ("1.50 ms", "2.00 µs", "3.00 MiB", "512 B", "23.5 GB/s", "12.3 %", "4×", "0.5×"):
        assert shown in text
    assert "duration_us" not in text and "(µs)" not in text


def test_mapping_table_same_style_and_units():
    table = mapping_table({"iteration_time_s": 0.0486, "flows": 12, "mode": "packet"}, title="m")
    assert table.box is BOX
    text = _text(table)
    assert "48.6 ms" in text and "iteration time " in text and "packet" in text and "12" in text
    assert "iteration_time_s" not in text


def test_missing_values_are_a_dash():
    text = _text(
        frame_table(pl.DataFrame({"fct_ps": [None, 1_500_000]}, schema={"fct_ps": pl.Int64}))
    )
    assert "-" in text and "1.50 µs" in text
