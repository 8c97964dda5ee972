"""The engine-neutral field-table machinery (``wormsim.netsim.common.field_spec``)."""

from __future__ import annotations

import numpy as np
import pytest

from wormsim.netsim.common.field_spec import (
    COMMON_UNITS,
    UNIT_SUFFIXES,
    Dim,
    FieldLayoutError,
    FieldSpec,
    FieldTable,
)

UNITS = {"bytes": "bytes", "bit/s": "bits per second", "id": "an index", "flag": "0 or 1"}
DIMS = (
    Dim("flow", "a flow"),
    Dim("slot", "a list slot, at least 1", extent=lambda s: max(s["flow"], 1)),
    Dim("pair", "two ends", fixed=2),
    Dim("pool", "pool slot"),
)


def _table(*extra: FieldSpec) -> FieldTable:
    return FieldTable(
        DIMS,
        [
            FieldSpec("size", np.int64, ("flow",), "bytes", "bytes to send", None, "flows"),
            FieldSpec("rate_bps", np.float64, ("flow",), "bit/s", "its rate", 0, "flows"),
            FieldSpec("ends", np.int32, ("flow", "pair"), "id", "source | dest", -1, "flows"),
            FieldSpec("list", np.int64, ("slot",), "id", "active flows", 0, "flows"),
            FieldSpec("nxt", np.int32, ("pool",), "id", "next in list", -1, "pool"),
            FieldSpec("used", np.int8, ("pool",), "flag", "in use", 0, "pool"),
            *extra,
        ],
        UNITS,
        {"bit/s": "_bps"},
    )


def test_extents_allocation_and_growth():
    t = _table()
    sizes = {"flow": 0, "pool": 3}
    assert t.names == ("size", "rate_bps", "ends", "list", "nxt", "used")
    assert t.shape("ends", sizes) == (0, 2) and t.shape("list", sizes) == (1,)
    a = t.allocate(sizes)
    assert "size" not in a  # built by the caller
    assert a["nxt"].dtype == np.int32 and (a["nxt"] == -1).all()
    a["size"] = np.zeros(0, np.int64)
    t.check(a, sizes)
    a["used"][:] = 1
    g = t.grow(a, "pool", 5)
    assert set(g) == {"nxt", "used"} == set(t.along("pool"))
    assert g["used"].tolist() == [1, 1, 1, 0, 0] and g["nxt"].tolist() == [-1] * 5
    with pytest.raises(FieldLayoutError, match="used"):
        t.grow(a, "pool", 2, skip=("nxt",))
    with pytest.raises(FieldLayoutError, match="'flow'"):
        t.shape("size", {})


def test_nbytes_is_what_the_whole_state_takes_once_allocated():
    t = _table()
    sizes = {"flow": 7, "pool": 3}
    a = t.allocate(sizes)
    a["size"] = np.zeros(7, np.int64)  # the field the caller builds, at its declared shape
    t.check(a, sizes)
    assert t.nbytes(sizes) == sum(x.nbytes for x in a.values()) == 7 * (8 + 8 + 8 + 8) + 3 * 5


def test_check_reports_the_field():
    t = _table()
    sizes = {"flow": 2, "pool": 3}
    a = t.allocate(sizes) | {"size": np.zeros(2, np.int64)}
    t.check(a, sizes)
    with pytest.raises(FieldLayoutError, match="'ends' has shape \\(2, 3\\)"):
        t.check(a | {"ends": np.zeros((2, 3), np.int32)}, sizes)
    with pytest.raises(FieldLayoutError, match="'size' has dtype int32"):
        t.check(a | {"size": np.zeros(2, np.int32)}, sizes)
    ro = np.zeros(2, np.int64)
    ro.flags.writeable = False
    with pytest.raises(FieldLayoutError, match="'size' is not a writeable"):
        t.check_types(a | {"size": ro})
    with pytest.raises(FieldLayoutError, match="'size' is a list"):
        t.check_types(a | {"size": [0, 0]})


@pytest.mark.parametrize(
    "bad, why",
    [
        (FieldSpec("size", np.int64, ("flow",), "bytes", "again"), "twice"),
        (FieldSpec("x", np.int64, ("nowhere",), "bytes", "?"), "unknown dimension"),
        (FieldSpec("x", np.int64, ("flow",), "furlongs", "?"), "vocabulary"),
        (FieldSpec("cap", np.float64, ("flow",), "bit/s", "a rate without its unit"), "_bps"),
        (FieldSpec("x_bps", np.int64, ("flow",), "bytes", "not a rate"), "_bps"),
        (FieldSpec("x", np.int64, (), "bytes", "a scalar"), "no dimension"),
    ],
)
def test_table_refuses_bad_rows(bad, why):
    with pytest.raises(ValueError, match=why):
        _table(bad)


@pytest.mark.parametrize(
    "bad, why",
    [
        (FieldSpec("t_start", np.int64, ("flow",), "ps", "a time without its unit"), "_ps"),
        (FieldSpec("rtt", np.int64, ("flow",), "ns", "a time without its unit"), "_ns"),
        (FieldSpec("rtt_ps", np.int64, ("flow",), "ns", "the wrong unit"), "_ns"),
        (FieldSpec("x_ns", np.int64, ("flow",), "bytes", "not a time"), "_ns"),
        (FieldSpec("x_ps", np.int64, ("flow",), "bytes/ps", "a rate"), "_Bpps"),
    ],
)
def test_a_table_with_the_unit_suffixes_refuses_a_time_without_its_unit(bad, why):
    units = {**COMMON_UNITS, "ns": "nanoseconds", "bytes": "bytes"}
    with pytest.raises(ValueError, match=why):
        FieldTable([Dim("flow", "a flow")], [bad], units, UNIT_SUFFIXES)
    FieldTable(  # a unit may share its suffix with another
        [Dim("flow", "a flow")],
        [FieldSpec("t_ns", np.int64, ("flow",), "wrapping ns", "INT time")],
        {**units, "wrapping ns": "ns mod 2^24"},
        {**UNIT_SUFFIXES, "wrapping ns": "_ns"},
    )


def test_markdown_lists_every_field_and_escapes_pipes():
    md = _table().markdown()
    assert "| `ends` | int32 | `flow` × `pair` | id | -1 | source \\| dest |" in md
    assert "| `size` | int64 | `flow` | bytes | built | bytes to send |" in md
    assert md.count("**flows**") == 1 and md.count("**pool**") == 1
    assert "| `slot` | a list slot, at least 1 |" in md
