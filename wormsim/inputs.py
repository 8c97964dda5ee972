"""Reading user input safely: text files, YAML, and the range of simulated time.

Every stage reads user files through :func:`read_text` (a size bound, UTF-8 decoding with the
line of a bad byte in the message) and checks computed times against :data:`MAX_TIME_PS`, so bad
input gets a :class:`~wormsim.errors.WormsimError` naming the file, the line and the fix instead of
a ``UnicodeDecodeError``, ``MemoryError`` or ``OverflowError``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from wormsim.errors import ConfigError, UnreadableFileError, WormsimError
from wormsim.units import PS_PER_S_F

__all__ = [
    "MAX_TIME_PS",
    "MAX_TEXT_BYTES",
    "read_text",
    "check_finite",
    "format_ps",
    "load_yaml",
    "parse_assignment",
    "depth_guard",
    "MAX_DEPTH",
    "MAX_NODES",
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
    s = ps / PS_PER_S_F
    from wormsim.humanize import human_number

    if s >= 86400:
        return f"{human_number(s / 86400, trim=True)} days"
    return f"{human_number(s, trim=True)} s"


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


#: Deepest nesting of mappings and lists.
MAX_DEPTH = 32
#: Most YAML nodes a document may have once its aliases are expanded.
MAX_NODES = 100_000


def _yaml_guard(text: str, source: str) -> None:
    """Refuse YAML nested deeper than MAX_DEPTH or expanding (aliases) beyond MAX_NODES nodes.

    Walks the parser's event stream (no recursion, nothing built): a collection's size is the sum
    of its children's, and an alias counts the full size of its anchor.
    """
    sizes: dict[str, int] = {}
    stack: list[list] = [[None, 0]]  # [anchor, nodes so far]
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        line = ev.start_mark.line + 1 if ev.start_mark else 0
        if isinstance(ev, yaml.CollectionStartEvent):
            stack.append([ev.anchor, 1])
            if len(stack) - 1 > MAX_DEPTH:
                raise ConfigError(
                    f"{source}:{line}: nested more than {MAX_DEPTH} levels deep; an experiment "
                    "needs a few levels (section, field, value)"
                )
            continue
        if isinstance(ev, yaml.CollectionEndEvent):
            anchor, n = stack.pop()
            if anchor is not None:
                sizes[anchor] = n
        elif isinstance(ev, yaml.AliasEvent):
            n = sizes.get(ev.anchor, 1)
        elif isinstance(ev, yaml.ScalarEvent):
            n = 1
            if ev.anchor is not None:
                sizes[ev.anchor] = 1
        else:
            continue
        stack[-1][1] += n
        if stack[-1][1] > MAX_NODES:
            raise ConfigError(
                f"{source}:{line}: the document expands to more than {MAX_NODES:,} nodes "
                "(YAML anchors and aliases repeat whole subtrees); write the values out or "
                "remove the aliases"
            )


def depth_guard(data: Any, source: str) -> None:
    """Refuse mappings/lists nested deeper than MAX_DEPTH (iteratively: no recursion)."""
    todo = [(data, 0, "")]
    while todo:
        node, depth, where = todo.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(
                f"{source}: {where.lstrip('.') or 'the document'} is nested more than "
                f"{MAX_DEPTH} levels deep; a configuration needs a few levels"
            )
        if isinstance(node, dict):
            todo += [(v, depth + 1, f"{where}.{k}") for k, v in node.items()]
        elif isinstance(node, list):
            todo += [(v, depth + 1, f"{where}[{i}]") for i, v in enumerate(node)]


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML safely (no tags, bounded nesting and alias expansion); errors name ``source``."""
    _yaml_guard(text, source)
    return yaml.safe_load(text)


def parse_assignment(item: str, flag: str, example: str) -> tuple[list[str], Any]:
    """One ``KEY=VALUE`` item of ``--set`` or ``--wormhole``: the dotted key's parts and the
    value read as a YAML scalar (``4`` an int, ``0.1`` a float, ``off`` a string).

    The one parser for every ``KEY=VALUE`` option, so all of them take the same syntax.

    Raises
    ------
    ConfigError
        No ``=`` or an empty key; the message quotes ``flag`` and ``example``.

    Examples
    --------
    >>> parse_assignment("parallel.tp=4", "--set", "parallel.tp=4")
    (['parallel', 'tp'], 4)
    """
    key, sep, raw = item.partition("=")
    parts = [p for p in key.strip().split(".") if p]
    if not sep or not parts:
        raise ConfigError(f"{flag} {item!r}: write it as KEY=VALUE, e.g. {flag} {example}")
    try:
        value = load_yaml(raw, f"{flag} {item!r}") if raw.strip() else raw
    except yaml.YAMLError:
        value = raw
    return parts, value
