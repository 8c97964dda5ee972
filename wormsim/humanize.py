"""Numbers for people: significant digits without scientific notation, k/M/G counts, times.

Every number a person reads (console, ``report.md``, progress lines, logs) goes through these,
so none is ever printed as ``2.185e+04``.
"""

from __future__ import annotations

import math

from wormsim.units import PS_PER_MS_F, PS_PER_NS_F, PS_PER_S_F, PS_PER_US_F

__all__ = ["human_number", "human_count", "human_time"]


def human_number(x: float, sig: int = 3, trim: bool = False) -> str:
    """``sig`` significant digits, never in scientific notation; ``trim`` drops trailing zeros
    (as ``%g`` does).

    >>> human_number(1.5), human_number(48.61), human_number(21850.4), human_number(0.0000251)
    ('1.50', '48.6', '21,850', '0.0000251')
    >>> human_number(4.0, trim=True), human_number(0.5, trim=True)
    ('4', '0.5')
    """
    if x == 0 or not math.isfinite(x):
        return f"{x:.0f}" if x == 0 else str(x)
    exp = math.floor(math.log10(abs(x)))
    if exp >= sig - 1:
        return f"{x:,.0f}"
    text = f"{x:.{sig - 1 - exp}f}"
    return text.rstrip("0").rstrip(".") if trim else text


def human_count(x: float) -> str:
    """A count or rate in k/M/G: ``1_234_567`` -> ``'1.23 M'``, ``512`` -> ``'512'``."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{human_number(x / scale)} {unit}"
    return human_number(x) if x != int(x) else f"{int(x)}"


def human_time(ps: float, sig: int = 3) -> str:
    """A time in picoseconds in the unit that reads best (``'48.6 ms'``, ``'1.03 µs'``), to
    ``sig`` significant digits.

    >>> human_time(2.185e10, sig=4), human_time(1.03e6)
    ('21.85 ms', '1.03 µs')
    """
    a = abs(ps)
    if a == 0:
        return "0"
    for unit, scale in (
        ("s", PS_PER_S_F),
        ("ms", PS_PER_MS_F),
        ("µs", PS_PER_US_F),
        ("ns", PS_PER_NS_F),
    ):
        if a >= scale:
            return f"{human_number(ps / scale, sig)} {unit}"
    return f"{ps:.0f} ps"
