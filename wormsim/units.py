"""Unit conversions the engines share (times in ps, sizes in bytes, rates in bit/s)."""

from __future__ import annotations

__all__ = ["BPS_PER_BYTE_PER_PS", "PS_PER_NS"]

BPS_PER_BYTE_PER_PS = 8e12
"""Bit/s per byte/ps: a rate of ``x`` bytes/ps is ``x * 8e12`` bit/s, and ``n`` bytes take
``n * 8e12 / r`` ps at ``r`` bit/s (8 bits a byte, 10^12 ps a second)."""

PS_PER_NS = 1000
"""Picoseconds per nanosecond (an int: integer times stay integer)."""
