"""Unit conversions the engines share (times in ps, sizes in bytes, rates in bit/s).

Every factor between two units is named here, so no module of ``wormsim/netsim`` writes
``* 1000`` or ``/ 1e12`` for a unit conversion (``tests/netsim/packet/test_codes.py`` holds it
to that). An integer factor keeps integer arithmetic integer (``t_ns * PS_PER_NS`` of an int is
an int, as ``t_ns * 1000`` was); its ``_F`` twin is the same factor as a float, for the places
that multiply or divide by a float (``x * 1e6``, ``t / 1e12``), whose result is a float even for
an integer ``x``. Replacing a literal by its name changes no result: numba and Python see the
same constant.
"""

from __future__ import annotations

__all__ = [
    "BPS_PER_BYTE_PER_PS",
    "BPS_PER_BYTE_PER_PS_INT",
    "BPS_PER_BYTE_PER_NS_INT",
    "BITS_PER_BYTE",
    "BYTES_PER_KB",
    "PS_PER_NS",
    "NS_PER_US",
    "NS_PER_S",
    "PS_PER_NS_F",
    "PS_PER_US_F",
    "PS_PER_MS_F",
    "PS_PER_S_F",
    "NS_PER_US_F",
    "NS_PER_S_F",
    "S_PER_NS",
    "BPS_PER_GBPS_F",
    "MS_PER_S_F",
    "BYTES_PER_GB_F",
    "BYTES_PER_US_PER_GB_PER_S_F",
    "FLOPS_PER_TFLOPS_F",
]

BPS_PER_BYTE_PER_PS = 8e12
"""Bit/s per byte/ps: a rate of ``x`` bytes/ps is ``x * 8e12`` bit/s, and ``n`` bytes take
``n * 8e12 / r`` ps at ``r`` bit/s (8 bits a byte, 10^12 ps a second)."""
BPS_PER_BYTE_PER_PS_INT = 8_000_000_000_000
""":data:`BPS_PER_BYTE_PER_PS` as an int: ``n * BPS_PER_BYTE_PER_PS_INT // r`` is the whole ps
``n`` bytes take at an integer ``r`` bit/s."""
BPS_PER_BYTE_PER_NS_INT = 8_000_000_000
"""Bit/s per byte/ns, an int: ``n * BPS_PER_BYTE_PER_NS_INT // r`` is the whole ns ``n`` bytes
take at an integer ``r`` bit/s (ns-3's integer serialisation time)."""
BITS_PER_BYTE = 8
BYTES_PER_KB = 1000
"""ns-3's KB (``KMIN_MAP``, ``KMAX_MAP``): 1000 bytes."""

PS_PER_NS = 1000
NS_PER_US = 1000
NS_PER_S = 1_000_000_000

PS_PER_NS_F = 1e3
PS_PER_US_F = 1e6
PS_PER_MS_F = 1e9
PS_PER_S_F = 1e12
NS_PER_US_F = 1e3
NS_PER_S_F = 1e9
S_PER_NS = 1e-9
"""Seconds per ns (``tau * S_PER_NS``: ns to s, as ns-3 writes ``tau * 1e-9``)."""

BPS_PER_GBPS_F = 1e9
"""Bit/s per Gbit/s (a float: ``gbps * BPS_PER_GBPS_F``)."""

MS_PER_S_F = 1e3
"""Milliseconds per second (``t_s * MS_PER_S_F``)."""

BYTES_PER_GB_F = 1e9
"""Bytes per GB (10^9 bytes; also bytes/s per GB/s, as HBM bandwidths are given)."""
BYTES_PER_US_PER_GB_PER_S_F = 1e3
"""Bytes/µs per GB/s: an algorithm bandwidth in GB/s is ``bytes / t_us /
BYTES_PER_US_PER_GB_PER_S_F``, and ``bytes`` take ``bytes / (BYTES_PER_US_PER_GB_PER_S_F * gbs)``
µs at ``gbs`` GB/s."""

FLOPS_PER_TFLOPS_F = 1e12
"""FLOP/s per TFLOP/s (GPU peak rates)."""
