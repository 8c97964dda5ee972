"""Reading user input safely: text files, and the range of simulated time.

Every stage reads user files through :func:`read_text` (a size bound, UTF-8 decoding with the
line of a bad byte in the message) and checks computed times against :data:`MAX_TIME_PS`, so bad
input gets a :class:`~wormsim.errors.WormsimError` naming the file, the line and the fix instead of
a ``UnicodeDecodeError``, ``MemoryError`` or ``OverflowError``.
"""

from __future__ import annotations

import math
from pathlib import Path

from wormsim.errors import UnreadableFileError, WormsimError

__all__ = [
    "MAX_TIME_PS",
    "MAX_TEXT_BYTES",
    "read_text",
    "check_finite",
    "format_ps",
]

#: Largest simulated time any input may lead to: 2**62 ps (about 53 days), half the int64
#: picosecond range, so sums of times (start + duration, event times) cannot overflow.
MAX_TIME_PS = 2**62

#: Default size bound of a text input file (1 GiB).
MAX_TEXT_BYTES = 1 << 30


def format_ps(ps: float) -> str:
    """A time in picoseconds, readably (``'3.2 s'``, ``'53.4 days'``).

    Examples
    --------
    >>> format_ps(MAX_TIME_PS)
    '53.4 days'
    >>> format_ps(2.5e12)
    '2.5 s'
    """
    s = ps / 1e12
    return f"{s / 86400:.3g} days" if s >= 86400 else f"{s:.3g} s"


def read_text(
    path: str | Path,
    what: str,
    error: type[WormsimError] = UnreadableFileError,
    max_bytes: int = MAX_TEXT_BYTES,
) -> str:
    """The text of a UTF-8 file (a byte-order mark is allowed).

    Parameters
    ----------
    path : the file.
    what : what the file is, for messages (``"topology"``, ``"experiment"``).
    error : the exception class to raise (the stage's :class:`WormsimError` subclass).
    max_bytes : files larger than this are refused before they are read.

    Raises
    ------
    WormsimError
        (of class ``error``) A missing file, a file over ``max_bytes``, or one that is not UTF-8
        (naming the line and column of the first bad byte).
    """
    p = Path(path)
    if not p.is_file():
        raise error(f"{what} file {p} does not exist")
    size = p.stat().st_size
    if size > max_bytes:
        raise error(
            f"{p}: the {what} file is {size:,} bytes, over the limit of {max_bytes:,}; "
            "is it the right file?"
        )
    data = p.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(
            f"{p}:{line}: the {what} file is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
            f"column {col}); save it as UTF-8 or plain ASCII"
        ) from None


def check_finite(value: float, what: str, error: type[WormsimError] = WormsimError) -> float:
    """``value`` if it is a finite number, else ``error`` naming ``what``."""
    if not math.isfinite(value):
        raise error(f"{what} is {value}; it must be a finite number")
    return value
