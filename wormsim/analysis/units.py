"""The unit vocabulary of report tables: every numeric column names its unit by its suffix.

A column of a report table (``breakdown``, ``collectives``, ``flow_stats``, ``links``, ...) is
either a *label* (an id, a name, a list of ranks: :data:`LABEL_COLUMNS`) or ends in one of
:data:`UNIT_SUFFIXES`, which says the unit its values are stored in (parquet and CSV hold the
raw number in that unit; the console and ``report.md`` show it humanised by
:func:`format_value`).

>>> unit_of("duration_us")
'µs'
>>> format_value("busbw_GBps", 23.456)
'23.5 GB/s'
>>> format_value("exposed_dp_pct", 12.345)
'12.3 %'
>>> format_value("fct_ps", 1_500_000)
'1.50 µs'
"""

from __future__ import annotations

import math
from typing import Any

from wormsim.humanize import human_count, human_number, human_time
from wormsim.units import BPS_PER_GBPS_F, PS_PER_MS_F, PS_PER_NS_F, PS_PER_S_F, PS_PER_US_F

__all__ = [
    "UNIT_SUFFIXES",
    "LABEL_COLUMNS",
    "unit_of",
    "has_unit",
    "format_value",
    "human_time",
    "human_bytes",
    "human_number",
    "human_count",
]

#: Column-name suffix -> the unit its values are in.
UNIT_SUFFIXES: dict[str, str] = {
    "_ps": "ps",
    "_ns": "ns",
    "_us": "µs",
    "_ms": "ms",
    "_s": "s",
    "_bytes": "bytes",
    "_GBps": "GB/s (10⁹ bytes/s)",
    "_Gbps": "Gbit/s",
    "_bps": "bit/s",
    "_pct": "% (0-100)",
    "_x": "× (ratio)",
    "_count": "count",
}

#: Columns that are labels (ids, names, sets), not quantities, so carry no unit.
LABEL_COLUMNS: frozenset[str] = frozenset(
    {
        "rank",
        "ranks",
        "stage",
        "op_id",
        "coll_id",
        "flow_id",
        "port",
        "node",
        "peer",
        "src",
        "dst",
        "kind",
        "name",
        "phase",
        "group",
        "dim",
        "collective",
        "algorithm",
        "tier",
        "traffic_class",
        "category",
        "layer",
        "layer_name",
        "microbatch",
        "step",
        "channel",
        "key",
        "value",
        "metric",
        "by",
        "class",
        "node_kind",
        "peer_kind",
        "critical",
    }
)

_TIME_SCALE_PS = {
    "_ps": 1.0,
    "_ns": PS_PER_NS_F,
    "_us": PS_PER_US_F,
    "_ms": PS_PER_MS_F,
    "_s": PS_PER_S_F,
}


def _suffix(col: str) -> str | None:
    # longest suffix first, so ``_ps`` is not taken for ``_Gbps``-like names
    for suf in sorted(UNIT_SUFFIXES, key=len, reverse=True):
        if col.endswith(suf):
            return suf
    return None


def unit_of(col: str) -> str | None:
    """The unit of a column (short form: ``'µs'``, ``'GB/s'``, ``'%'``), ``None`` for labels."""
    suf = _suffix(col)
    if suf is None:
        return None
    return UNIT_SUFFIXES[suf].split(" ")[0]


def has_unit(col: str) -> bool:
    """Whether a column is a label or names its unit (the contract every report table keeps)."""
    return col in LABEL_COLUMNS or _suffix(col) is not None


def human_bytes(n: float, compact: bool = False) -> str:
    """A byte count in B/KiB/MiB/GiB/TiB: ``1536`` -> ``'1.50 KiB'``; ``compact`` drops the
    decimals of whole values (axis ticks: ``'8 KiB'``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            if unit == "B" or (compact and value == int(value)):
                return f"{value:.0f} {unit}"
            return f"{human_number(value, trim=True)} {unit}" if compact else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError


def format_value(col: str, value: Any) -> str:
    """One cell for people: times in the best unit, bytes in KiB/MiB/GiB, ``%``, ``GB/s``, ``×``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)
    suf = _suffix(col)
    if suf in _TIME_SCALE_PS:
        return human_time(float(value) * _TIME_SCALE_PS[suf])
    if suf == "_bytes":
        return human_bytes(value)
    if suf == "_GBps":
        return f"{human_number(value, trim=True)} GB/s"
    if suf == "_Gbps":
        return f"{human_number(value, trim=True)} Gbit/s"
    if suf == "_bps":
        return f"{human_number(value / BPS_PER_GBPS_F, trim=True)} Gbit/s"
    if suf == "_pct":
        return f"{value:.1f} %"
    if suf == "_x":
        return f"{human_number(value, trim=True)}×"
    if isinstance(value, float):
        return human_number(value, 4, trim=True)
    return f"{value:,}"
