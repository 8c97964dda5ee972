"""State codes are named: no kernel module compares or sets a partition's state, a QP's hold or
a hop's phantom load with a bare number, no driver compares the kernel's return status with a
number, and no module writes the rate conversion 8e12."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import wormsim
from wormsim.netsim.packet import state as st
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
    assert _BARE.search("        if S.wh_state[r] == 2 and S.wh_t1_ps[r] > now:")
    assert _BARE.search("    S.fs_pon[j] = 1")
    assert _BARE.search('        parked = qs[A["wh_hold"][qs] != 1]')
    assert not _BARE.search("        if S.wh_state[r] == PART_SKIPPED:")
    assert BPS_PER_BYTE_PER_PS == 8 * 10**12


# ``status == 2``, ``run_kernel(...) == 1``: the statuses are state.RUN_*
_STATUS = re.compile(r"(?:\bstatus|run_kernel\(.*\))\s*(?:==|!=)\s*\d")
_DRIVERS = (
    PACKAGE / "netsim" / "packet" / "run.py",
    *sorted((PACKAGE.parent / "bench").glob("*.py")),
)


def test_the_return_statuses_and_event_types_are_named_and_distinct():
    statuses = (st.RUN_FINISHED, st.RUN_STOPPED, st.RUN_NEEDS_ROOM, st.RUN_MEMO_PENDING)
    assert sorted(statuses) == [0, 1, 2, 3]
    assert len(st.EVENT_NAMES) == st.EV_FLAND + 1 == len(set(st.EVENT_NAMES))
    assert st.EVENT_NAMES[st.EV_CC] == "cc_timer" and st.EV_CC < st.EV_FIRST_WH


def test_no_driver_compares_the_kernel_status_with_a_number():
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in _DRIVERS
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _STATUS.search(line)
    ]
    assert not found, "compare with wormsim.netsim.packet.state.RUN_*:\n" + "\n".join(found)
    assert _STATUS.search("        if status == 3:")
    assert _STATUS.search("    while run_kernel(S, P, t, 64, 64, n) == 1:")
    assert not _STATUS.search("        if status == st.RUN_MEMO_PENDING:")


# a factor between units of time, rate or size, multiplied or divided by: wormsim.units names it
_FACTORS = {1e3, 1e6, 1e9, 1e12, 1e15, 1e-3, 1e-6, 1e-9, 1e-12, 8e3, 8e6, 8e9, 8e12, 8e14, 8e15}
_OPS = {"*", "/", "//"}


def _is_factor(number: str) -> bool:
    try:
        return float(number.replace("_", "")) in _FACTORS
    except ValueError:  # 0xFF, 1j
        return False


def _bare_factors(text: str) -> list[tuple[int, str]]:
    """``(line, token)`` of every number in :data:`_FACTORS` next to ``*``, ``/`` or ``//`` in
    Python source ``text`` (strings and comments aside)."""
    toks = [
        t
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
    ]
    found = []
    for i, t in enumerate(toks):
        if t.type != tokenize.NUMBER or not _is_factor(t.string):
            continue
        near = {toks[j].string for j in (i - 1, i + 1) if 0 <= j < len(toks)}
        if near & _OPS:
            found.append((t.start[0], t.string))
    return found


def test_no_netsim_module_writes_a_bare_unit_conversion():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {tok}"
        for path in sorted((PACKAGE / "netsim").rglob("*.py"))
        for n, tok in _bare_factors(path.read_text(encoding="utf-8"))
    ]
    assert not found, "use the factors of wormsim.units:\n" + "\n".join(found)


def test_the_conversion_check_catches_what_it_looks_for():
    assert _bare_factors("x = now // 1000\n") == [(1, "1000")]
    assert _bare_factors("y = 1e-9 * tau\n") == [(1, "1e-9")]
    assert _bare_factors("z = n * 8_000_000_000 // r\n") == [(1, "8_000_000_000")]
    assert not _bare_factors("w = f(1000)  # * 1000\ns = 'a * 1e6'\n")
    assert not _bare_factors("x = now // PS_PER_NS\n")
