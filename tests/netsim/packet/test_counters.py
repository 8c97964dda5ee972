"""The kernel's counters are rows of one table: their slots are assigned by position, the names
``state.py`` gives them follow that order, and no module types a slot number."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import wormsim
from wormsim.netsim.packet import counters as c
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.fields import STATE_TABLE, UNITS

PACKAGE = Path(wormsim.__file__).resolve().parent
ENGINE_DOC = PACKAGE.parent / "docs" / "reference" / "engine-fields.md"


def test_each_name_of_state_is_the_slot_of_its_row():
    names = [r.name for r in c.COUNTERS]
    assert len(set(names)) == len(names)
    for i, row in enumerate(c.COUNTERS):
        assert getattr(st, row.name) == i, row.name
    declared = sorted(n for n in vars(st) if re.fullmatch(r"C_[A-Z_]+", n))
    assert declared == sorted(names), "every C_* of state.py is a row of counters.COUNTERS"


def test_the_counter_array_has_one_slot_per_row_and_each_unit_is_known():
    assert st.N_COUNTERS == c.N_COUNTERS == len(c.COUNTERS)
    assert next(f for f in STATE_TABLE if f.name == "cnt").dims == ("counter",)
    assert STATE_TABLE.dims["counter"].fixed == c.N_COUNTERS
    for row in c.COUNTERS:
        assert row.unit in UNITS, row


def test_no_module_types_a_counter_slot():
    """``C_X = 35`` or ``C_X, C_Y = 35, 37`` anywhere is a slot typed by hand."""
    typed = re.compile(r"^\s*C_[A-Z_]+(?:\s*,\s*C_[A-Z_]+)*\s*=\s*(?:\d|\(?\s*\d)")
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if typed.match(line)
    ]
    assert not found, "add a row to wormsim/netsim/packet/counters.py instead:\n" + "\n".join(found)
    assert typed.match("C_WH_PARKED, C_WH_UNPARKED = 35, 37")
    assert typed.match("C_WH_LIVE = 41  # parked groups")


def test_the_engine_doc_holds_the_counter_table():
    text = ENGINE_DOC.read_text(encoding="utf-8")
    assert c.DOC.replace(text, c.TABLE) == text, (
        "docs/reference/engine-fields.md's counter table is stale: "
        "python -m wormsim.netsim.packet.counters --update docs/reference/engine-fields.md"
    )


def test_the_packet_counter_array_starts_with_the_heaps_two_slots():
    """``heap.py`` keeps its size and next sequence number in ``hc[0]`` and ``hc[1]``; the packet
    kernel passes ``cnt`` as ``hc``."""
    from wormsim.netsim.packet import heap

    assert (st.C_HEAPN, st.C_SEQ) == (heap.C_HEAPN, heap.C_SEQ) == (0, 1)


def test_public_names_are_unique_and_every_group_is_known():
    public = [r.public for r in c.COUNTERS if r.public is not None]
    assert len(set(public)) == len(public)
    for row in c.COUNTERS:
        assert row.group in c.GROUPS, row
        assert row.public is not None or not row.report, row


def test_the_published_and_reported_names_follow_the_table(monkeypatch):
    """A row is all it takes: the drivers publish it and the report shows it."""
    from wormsim.analysis import report
    from wormsim.netsim.wormhole.counters import wormhole_counters

    extra = (
        c.Counter("C_FAKE", "count", "a fake network counter", "network", "fakes", report=True),
        c.Counter("C_WH_FAKE", "count", "a fake Wormhole counter", "wormhole", "wh_fakes"),
    )
    monkeypatch.setattr(c, "COUNTERS", (*c.COUNTERS, *extra))
    cnt = np.arange(len(c.COUNTERS), dtype=np.int64)
    packet = c.published(cnt, ("engine", "network"))
    assert packet["fakes"] == st.N_COUNTERS and "wh_fakes" not in packet
    assert packet["events_processed"] == st.C_EVENTS and packet["sim_end_ps"] == st.C_NOW
    wormhole = wormhole_counters({"cnt": cnt}, SimpleNamespace(mtu=1000))
    assert wormhole["wh_fakes"] == st.N_COUNTERS + 1 and "fakes" not in wormhole
    assert wormhole["bytes_skipped"] == st.C_WH_BYTES
    assert "fakes" in report._engine_keys() and "fakes" not in report._wormhole_keys()
    assert "wh_fakes" not in report._wormhole_keys()  # not marked for the report
