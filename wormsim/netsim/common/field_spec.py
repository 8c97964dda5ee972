"""Tables that describe a structure-of-arrays engine state: one entry per array.

An engine whose state is a bag of flat numpy arrays (the packet kernel's ``State``; the flow
engine's arrays could be described the same way) lists each array once, as a :class:`FieldSpec`
in a :class:`FieldTable`, and derives from that table everything that used to repeat the list:

* the field names in order (:attr:`FieldTable.names`), for a structref or namedtuple;
* allocation of every array whose initial value is a constant (:meth:`FieldTable.allocate`) at
  its declared dtype and shape;
* growing every array along one dimension (:meth:`FieldTable.grow`: a packet pool, a heap);
* the check that a builder produced exactly the declared arrays (:meth:`FieldTable.check`), so a
  kernel never gets an array of another dtype, rank or layout (which numba would silently compile
  a second specialisation for) or of the wrong length;
* the reference table in the docs (:meth:`FieldTable.markdown`).

A dimension (:class:`Dim`) names what an axis is indexed by and how long it is: a fixed extent,
one computed from other extents, or one the builder states (``sizes[name]``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = [
    "Dim",
    "FieldSpec",
    "field_group",
    "FieldTable",
    "FieldLayoutError",
    "RATE_SUFFIXES",
    "TIME_SUFFIXES",
    "UNIT_SUFFIXES",
    "COMMON_UNITS",
    "DocBlock",
    "MarkdownTable",
    "Scalar",
    "scalar_table",
]


RATE_SUFFIXES = {"bit/s": "_bps", "bytes/ps": "_Bpps"}
"""Rate unit -> the suffix of every field in it (and only those), in both engines' tables."""

TIME_SUFFIXES = {"ps": "_ps", "ns": "_ns"}
"""Time unit -> the suffix of every field in it (and only those), in both engines' tables (a
table whose vocabulary has another unit of time maps it to one of these, e.g. a wrapping ns
counter to ``_ns``)."""

UNIT_SUFFIXES = {**RATE_SUFFIXES, **TIME_SUFFIXES}
"""Every unit whose fields carry it in their name: rates and times."""

COMMON_UNITS = {
    "ps": "picoseconds (simulated time)",
    "bit/s": "bits per second; the field name ends in `_bps`",
    "bytes/ps": "bytes per picosecond (1 bytes/ps = 8 Tbit/s); the field name ends in `_Bpps`",
    "flag": "0 or 1",
    "code": "an enumeration (values in the meaning)",
    "id": "an index along the dimension the meaning names; -1 = none",
    "mixed": "slots with their own units (see the meaning)",
}
"""The units both engines' tables use; each adds its own (``{**COMMON_UNITS, ...}``)."""


class FieldLayoutError(RuntimeError):
    """An engine's arrays do not match its field table (an internal error, not bad input)."""


@dataclass(frozen=True)
class Dim:
    """A dimension: what an array axis is indexed by, and its extent.

    Parameters
    ----------
    name : short name used in :attr:`FieldSpec.dims` (``"port"``, ``"qp"``, ``"hop"``).
    meaning : what one index along it is, and its extent in words.
    fixed : the extent when it does not depend on the scenario.
    extent : the extent computed from the other extents (``sizes`` mapping) otherwise.

    With neither ``fixed`` nor ``extent`` the extent is ``sizes[name]``, given by the builder.
    """

    name: str
    meaning: str
    fixed: int | None = None
    extent: Callable[[Mapping[str, int]], int] | None = None

    def size(self, sizes: Mapping[str, int]) -> int:
        """The extent of this dimension for a scenario whose base extents are ``sizes``."""
        if self.fixed is not None:
            return self.fixed
        if self.extent is not None:
            return int(self.extent(sizes))
        try:
            return int(sizes[self.name])
        except KeyError:
            raise FieldLayoutError(f"no extent given for dimension {self.name!r}") from None


@dataclass(frozen=True)
class FieldSpec:
    """One array of an engine state.

    Parameters
    ----------
    name : the field name (attribute of the kernel's state, key of the Python dict).
    dtype : numpy scalar type of the array (``np.int64``, ``np.float64``, ...).
    dims : names of its dimensions (:class:`Dim`), first axis first.
    unit : unit of its values, a key of the table's unit vocabulary.
    meaning : one line: what an element holds.
    init : the constant every element starts at (the array is then allocated mechanically), or
        ``None`` when the builder computes the array from its inputs.
    group : heading it is listed under in the docs.
    """

    name: str
    dtype: type[np.generic]
    dims: tuple[str, ...]
    unit: str
    meaning: str
    init: int | float | None = 0
    group: str = ""


def field_group(group: str, rows: Iterable[tuple]) -> list[FieldSpec]:
    """Rows ``(name, dtype, "dim dim", unit, init, meaning)`` of one docs group as field specs."""
    return [
        FieldSpec(name, dtype, tuple(dims.split()), unit, meaning, init, group)
        for name, dtype, dims, unit, init, meaning in rows
    ]


class FieldTable:
    """The ordered fields of one engine state, with their dimensions and unit vocabulary.

    Parameters
    ----------
    dims : every dimension a field may use.
    fields : the fields, in the order of the state's structure.
    units : the unit vocabulary, symbol -> definition; every field's unit must be one of them.
    suffixes : unit -> the suffix every field of that unit ends with, and only those (e.g.
        :data:`UNIT_SUFFIXES`: rates and times; several units may share a suffix); checked when
        the table is built.

    Raises
    ------
    ValueError
        On a duplicate field or dimension, an unknown dimension or unit, or a field whose name
        breaks a ``suffixes`` rule.
    """

    def __init__(
        self,
        dims: Iterable[Dim],
        fields: Iterable[FieldSpec],
        units: Mapping[str, str],
        suffixes: Mapping[str, str] | None = None,
    ) -> None:
        self.dims: dict[str, Dim] = {}
        for d in dims:
            if d.name in self.dims:
                raise ValueError(f"dimension {d.name!r} declared twice")
            self.dims[d.name] = d
        self.units = dict(units)
        self.suffixes = dict(suffixes or {})
        self._fields: dict[str, FieldSpec] = {}
        for f in fields:
            self._validate(f)
            self._fields[f.name] = f
        self.names: tuple[str, ...] = tuple(self._fields)

    def _validate(self, f: FieldSpec) -> None:
        if f.name in self._fields:
            raise ValueError(f"field {f.name!r} declared twice")
        if not f.dims:
            raise ValueError(f"field {f.name!r} has no dimension")
        for d in f.dims:
            if d not in self.dims:
                raise ValueError(f"field {f.name!r}: unknown dimension {d!r}")
        if f.unit not in self.units:
            raise ValueError(f"field {f.name!r}: unit {f.unit!r} is not in the vocabulary")
        np.dtype(f.dtype)  # a real numpy type
        want = self.suffixes.get(f.unit)
        if want is not None and not f.name.endswith(want):
            raise ValueError(f"field {f.name!r} ({f.unit}): fields in {f.unit} end in {want!r}")
        for suffix in set(self.suffixes.values()) - {want}:
            if f.name.endswith(suffix):
                units = sorted(u for u, s in self.suffixes.items() if s == suffix)
                raise ValueError(
                    f"field {f.name!r} ({f.unit}): only fields in {', '.join(units)} end in "
                    f"{suffix!r}"
                )

    # -- lookup -------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[FieldSpec]:
        return iter(self._fields.values())

    def __len__(self) -> int:
        return len(self._fields)

    def __contains__(self, name: object) -> bool:
        return name in self._fields

    def __getitem__(self, name: str) -> FieldSpec:
        return self._fields[name]

    def along(self, dim: str) -> tuple[str, ...]:
        """Names of the fields whose first dimension is ``dim`` (those that grow with it)."""
        return tuple(f.name for f in self if f.dims[0] == dim)

    def shape(self, name: str, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """Declared shape of field ``name`` for base extents ``sizes``."""
        return tuple(self.dims[d].size(sizes) for d in self._fields[name].dims)

    def nbytes(self, sizes: Mapping[str, int]) -> int:
        """Bytes of every field of the table at base extents ``sizes`` (what allocating the
        whole state takes, before anything is allocated)."""
        return sum(math.prod(self.shape(f.name, sizes)) * np.dtype(f.dtype).itemsize for f in self)

    # -- allocation ---------------------------------------------------------------------------
    def allocate(
        self, sizes: Mapping[str, int], names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray]:
        """New arrays, at their ``init`` value, of every field of ``names`` (default: all) that
        has one; fields with ``init=None`` are left to the builder."""
        out = {}
        for name in self.names if names is None else names:
            f = self._fields[name]
            if f.init is None:
                continue
            shape = self.shape(name, sizes)
            if f.init == 0:
                out[name] = np.zeros(shape, f.dtype)
            else:
                out[name] = np.full(shape, f.init, f.dtype)
        return out

    def grow(
        self,
        arrays: Mapping[str, np.ndarray],
        dim: str,
        new: int,
        skip: Sequence[str] = (),
    ) -> dict[str, np.ndarray]:
        """Copies of the fields along ``dim`` (but ``skip``) extended to ``new`` along it: the old
        elements first, then ``init`` (fields without ``init`` start at 0)."""
        out = {}
        for name in self.along(dim):
            if name in skip:
                continue
            f = self._fields[name]
            old = arrays[name]
            n = old.shape[0]
            if new < n:
                raise FieldLayoutError(f"{name}: cannot grow {n} entries to {new}")
            shape = (new, *old.shape[1:])
            fill = 0 if f.init is None else f.init
            b = np.zeros(shape, f.dtype) if fill == 0 else np.full(shape, fill, f.dtype)
            b[:n] = old
            out[name] = b
        return out

    # -- checks -------------------------------------------------------------------------------
    def check_types(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Raise :class:`FieldLayoutError` unless ``arrays`` holds exactly the declared fields,
        each a writeable, aligned, C-contiguous array of its dtype and number of dimensions (what
        fixes its numba type)."""
        missing = [n for n in self.names if n not in arrays]
        extra = sorted(set(arrays) - set(self.names))
        if missing or extra:
            raise FieldLayoutError(
                f"state arrays do not match the field table: missing {missing}, undeclared {extra}"
            )
        for f in self:
            a = arrays[f.name]
            if not isinstance(a, np.ndarray):
                raise FieldLayoutError(f"field {f.name!r} is a {type(a).__name__}, not an array")
            if a.dtype != np.dtype(f.dtype):
                raise FieldLayoutError(
                    f"field {f.name!r} has dtype {a.dtype}, declared {np.dtype(f.dtype)}"
                )
            if a.ndim != len(f.dims):
                raise FieldLayoutError(
                    f"field {f.name!r} has {a.ndim} dimension(s), declared {len(f.dims)} "
                    f"({' x '.join(f.dims)})"
                )
            if not (a.flags.c_contiguous and a.flags.writeable and a.flags.aligned):
                raise FieldLayoutError(
                    f"field {f.name!r} is not a writeable, aligned, C-contiguous array"
                )

    def check(self, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int]) -> None:
        """:meth:`check_types`, and every field's shape is its declared one for ``sizes``.

        Raises
        ------
        FieldLayoutError
            Naming the first field that is missing, undeclared or of the wrong dtype, rank,
            layout or shape.
        """
        self.check_types(arrays)
        for f in self:
            want = self.shape(f.name, sizes)
            got = arrays[f.name].shape
            if got != want:
                dims = " x ".join(f.dims)
                raise FieldLayoutError(
                    f"field {f.name!r} has shape {got}, declared ({dims}) = {want}"
                )

    # -- docs ---------------------------------------------------------------------------------
    def markdown(self) -> str:
        """The reference tables: dimensions, units, then the fields by group (``init`` "built":
        computed by the builder)."""
        lines = ["| dimension | extent and meaning |", "|---|---|"]
        lines += [f"| `{d.name}` | {_cell(d.meaning)} |" for d in self.dims.values()]
        lines += ["", "| unit | meaning |", "|---|---|"]
        lines += [f"| {_cell(u)} | {_cell(m)} |" for u, m in self.units.items()]
        group = None
        for f in self:
            if f.group != group:
                group = f.group
                lines += ["", f"**{group}**", ""]
                lines += [
                    "| field | dtype | dimension | unit | init | meaning |",
                    "|---|---|---|---|---|---|",
                ]
            dims = " × ".join(f"`{d}`" for d in f.dims)
            init = "built" if f.init is None else repr(f.init)
            lines.append(
                f"| `{f.name}` | {np.dtype(f.dtype).name} | {dims} | {_cell(f.unit)} | {init} | "
                f"{_cell(f.meaning)} |"
            )
        return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """``text`` safe inside a markdown table cell."""
    return text.replace("|", "\\|")


@dataclass(frozen=True)
class MarkdownTable:
    """A generated reference that is not a field table (the congestion-control registry, the
    kernel's counters and parameters): ``render`` returns its markdown."""

    render: Callable[[], str]

    def markdown(self) -> str:
        """The table as markdown."""
        return self.render()


class Scalar(NamedTuple):
    """One named scalar of an engine (a counter slot, a kernel parameter): its name, its unit (of
    the engine's unit vocabulary) and its meaning."""

    name: str
    unit: str
    meaning: str


def scalar_table(rows: Sequence[Scalar], name_header: str, slots: bool = False) -> MarkdownTable:
    """``rows`` as a reference table: name, unit, meaning, led by each row's position when
    ``slots`` (a counter's slot is its position)."""

    def render() -> str:
        head = ["slot"] * slots + [name_header, "unit", "meaning"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for i, r in enumerate(rows):
            cells = [str(i)] * slots + [f"`{r.name}`", r.unit, _cell(r.meaning)]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    return MarkdownTable(render)


@dataclass(frozen=True)
class DocBlock:
    """A generated reference table inside a document, between two marker lines.

    Parameters
    ----------
    begin : the start of the opening marker line (the rest of that line may say more).
    end : the closing marker.
    """

    begin: str
    end: str

    def extract(self, text: str) -> str:
        """The generated reference between the markers of ``text`` (without them).

        Raises
        ------
        ValueError
            If the markers are missing or out of order.
        """
        a = text.find(self.begin)
        b = text.find(self.end)
        if a < 0 or b < a:
            raise ValueError(f"no {self.begin} ... {self.end} block")
        return text[text.index("\n", a) + 1 : b]

    def replace(self, text: str, table: FieldTable | MarkdownTable) -> str:
        """``text`` with the reference between its markers replaced by ``table``'s."""
        old = self.extract(text)
        a = text.index("\n", text.find(self.begin)) + 1
        return text[:a] + table.markdown() + text[a + len(old) :]

    def cli(
        self, table: FieldTable | MarkdownTable, argv: list[str] | None, description: str
    ) -> None:
        """Print ``table`` as markdown, or with ``--update FILE`` rewrite ``FILE``'s block."""
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--update", metavar="FILE", type=Path, help="rewrite FILE's block")
        args = parser.parse_args(argv)
        if args.update is None:
            print(table.markdown(), end="")
            return
        args.update.write_text(self.replace(args.update.read_text(), table))
