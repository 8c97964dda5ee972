"""State codes are named: no kernel module compares or sets a partition's state, a QP's hold or
a hop's phantom load with a bare number, and no module writes the rate conversion 8e12."""

from __future__ import annotations

import re
from pathlib import Path

import wormsim
from wormsim.netsim.packet.wormhole import fields as whf
from wormsim.units import BPS_PER_BYTE_PER_PS

PACKAGE = Path(wormsim.__file__).resolve().parent
_CODE_ROWS = ("wh_state", "wh_hold", "fs_pon")
# S.wh_state[r] == 2, and A["wh_hold"][qs] != 1 in the Python driver
_BARE = re.compile(
    r"\b(?:{})(?:\"\])?\[[^\]]*\]\s*(?:==|!=|<=|>=|<|>|=)\s*\d".format("|".join(_CODE_ROWS))
)
_RATE = re.compile(r"\b8e12\b")


def _lines():
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield f"{path.relative_to(PACKAGE.parent)}:{n}", line


def test_each_code_row_has_distinct_named_values():
    for names in (
        ("PART_TRANSIENT", "PART_STEADY", "PART_SKIPPED"),
        ("HOLD_FREE", "HOLD_WAITING", "HOLD_REMAPPED"),
        ("PHANTOM_OFF", "PHANTOM_ARMED", "PHANTOM_ON"),
    ):
        values = [getattr(whf, n) for n in names]
        assert len(set(values)) == len(values) and min(values) == 0, names  # 0: the row's default


def test_no_module_writes_a_state_code_or_the_rate_conversion_as_a_number():
    found = [
        f"{where}: {line.strip()}"
        for where, line in _lines()
        if _BARE.search(line) or (_RATE.search(line) and not where.startswith("wormsim/units.py"))
    ]
    assert not found, (
        "use the names of wormsim.netsim.packet.wormhole.fields / wormsim.units:\n"
        + "\n".join(found)
    )


def test_the_check_catches_what_it_looks_for():
    assert _BARE.search("        if S.wh_state[r] == 2 and S.wh_t1[r] > now:")
    assert _BARE.search("    S.fs_pon[j] = 1")
    assert _BARE.search('        parked = qs[A["wh_hold"][qs] != 1]')
    assert not _BARE.search("        if S.wh_state[r] == PART_SKIPPED:")
    assert BPS_PER_BYTE_PER_PS == 8 * 10**12
