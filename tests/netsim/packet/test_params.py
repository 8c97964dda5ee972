"""The kernel's scalars (``Params``) are rows of one table, with units, and a time or rate says
its unit in its name."""

from __future__ import annotations

from pathlib import Path

import wormsim
from wormsim.netsim.packet import fields as f
from wormsim.netsim.packet import state as st

ENGINE_DOC = Path(wormsim.__file__).resolve().parents[1] / "docs" / "reference" / "engine-fields.md"


def test_params_are_the_rows_of_the_table_in_order():
    names = [p.name for p in f.PARAMS]
    assert len(set(names)) == len(names)
    assert st.Params._fields == tuple(names) == st.PARAM_FIELDS


def test_every_unit_is_known_and_times_and_rates_end_in_their_unit():
    for p in f.PARAMS:
        assert p.unit in f.UNITS, p
        for unit, suffix in f.PARAM_SUFFIXES.items():
            assert (p.unit == unit) == p.name.endswith(suffix), (
                f"{p.name} ({p.unit}): parameters in {unit}, and only they, end in {suffix}"
            )


def test_the_engine_doc_holds_the_parameter_table():
    text = ENGINE_DOC.read_text(encoding="utf-8")
    assert f.PARAM_DOC.replace(text, f.PARAM_TABLE) == text, (
        "docs/reference/engine-fields.md's parameter table is stale: "
        "python -m wormsim.netsim.packet.fields --update docs/reference/engine-fields.md"
    )
