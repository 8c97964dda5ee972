"""The congestion-control registry is the one source of the congestion controls' names, codes,
header sizes and defaults, and nothing else in the package lists them."""

from __future__ import annotations

import ast
import importlib
import re
import typing
from pathlib import Path

import pytest

import wormsim
from wormsim.netsim import cc_registry as reg
from wormsim.netsim import cli as netsim_cli
from wormsim.netsim import network_config as nc
from wormsim.netsim.scenario import CCS

ROOT = Path(wormsim.__file__).resolve().parents[1]
PACKAGE = ROOT / "wormsim"
NS3 = ROOT / "tests" / "data" / "ns3"


def test_names_codes_and_ns3_names_are_unique():
    for attr in ("name", "code", "ns3_name", "kernel"):
        values = [getattr(c, attr) for c in reg.REGISTRY]
        assert len(set(values)) == len(values), attr


def test_the_kernel_codes_are_hpcc_ns3_cc_modes():
    """ns-3's ``CC_MODE``: 1 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP (``rdma-hw.cc``)."""
    assert {c.title: c.code for c in reg.NS3_MODES.values()} == {
        "DCQCN": 1,
        "HPCC": 3,
        "TIMELY": 7,
        "DCTCP": 8,
    }
    assert (reg.CC_DCQCN, reg.CC_HPCC, reg.CC_TIMELY, reg.CC_DCTCP) == (1, 3, 7, 8)


def test_every_list_of_the_package_is_derived_from_the_registry():
    assert reg.CC_NAMES == tuple(c.name for c in reg.REGISTRY)
    assert typing.get_args(nc.CcName) == reg.CC_NAMES
    assert typing.get_args(netsim_cli.CC) == reg.CC_NAMES
    assert CCS == reg.CC_NAMES
    assert nc.CC_MODES == {c.code: c.name for c in reg.REGISTRY if c.ns3_name is not None}
    assert nc.INT_HEADER_BYTES == {c.name: c.int_header_bytes for c in reg.REGISTRY}
    assert nc.CC_DEFAULTS == {c.name: dict(c.defaults) for c in reg.REGISTRY}


@pytest.mark.parametrize("cc", reg.CC_NAMES)
def test_a_spec_takes_its_cc_defaults(cc):
    spec = nc.NetworkSpec(cc=cc)
    for key, value in reg.BY_NAME[cc].defaults.items():
        if not isinstance(value, dict):  # the ECN thresholds are resolved per line rate
            assert getattr(spec, key) == value, key


def test_a_name_outside_the_registry_is_refused():
    with pytest.raises(ValueError, match="dcqcn"):
        nc.NetworkSpec(cc="bbr")


def test_every_kernel_module_exists_and_every_ns3_cc_has_ns3_reference_runs():
    for c in reg.REGISTRY:
        importlib.import_module(f"wormsim.netsim.packet.{c.kernel}")
        if c.ns3_name is not None:
            assert (NS3 / "dumbbell8" / c.ns3_name).is_dir(), c.ns3_name
    assert set(nc.CC_MODES) == set(reg.NS3_MODES) <= set(reg.BY_CODE)


def test_the_engine_doc_holds_the_registry_table():
    text = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    assert reg.DOC.replace(text, reg.TABLE) == text, (
        "docs/engine.md's table is stale: python -m wormsim.netsim.cc_registry --update "
        "docs/engine.md"
    )


_CODE_TEST = re.compile(r"\b(?:P\.)?cc\s*[!=]=\s*\d")
_CODE_MAP = re.compile(
    r"""\b\d\s*:\s*["'](?:dcqcn|hpcc|timely|dctcp)["']|["'](?:dcqcn|hpcc|timely|dctcp)["']\s*:\s*\d\b"""
)
_NAME = re.compile(r"""["'](dcqcn|hpcc|timely|dctcp)["']""")


def _package_lines():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "cc_registry.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield f"{path.relative_to(ROOT)}:{n}", line


def test_no_module_but_the_registry_writes_a_code_number_or_lists_the_names():
    """A comparison of ``cc`` with a number, a code-to-name map, or a line naming three or more
    congestion controls is a copy of the registry that a new congestion control would miss."""
    found = []
    for where, line in _package_lines():
        if _CODE_TEST.search(line) or _CODE_MAP.search(line):
            found.append(f"{where}: {line.strip()}")
        elif len(set(_NAME.findall(line))) >= 3:
            found.append(f"{where}: {line.strip()}")
    assert not found, "use wormsim.netsim.cc_registry instead:\n" + "\n".join(found)


def test_the_source_check_catches_what_it_looks_for():
    assert _CODE_TEST.search("    if P.cc == 3 and S.pk_type[p] == PK_DATA:")
    assert _CODE_MAP.search('_CC_CODE = {"dcqcn": 1, "hpcc": 3}')
    assert _CODE_MAP.search('CC_MODES = {1: "dcqcn"}')
    assert len(set(_NAME.findall('CCS = ("dcqcn", "hpcc", "timely", "dctcp")'))) >= 3
    assert not _CODE_TEST.search("    if P.cc == CC_HPCC:")


KERNEL = PACKAGE / "netsim" / "packet"
_CC_STATE_ROW = re.compile(r"\bS\.(?:{})\[".format("|".join(name for name, *_ in reg.STATE)))
_CC_IMPORT = re.compile(
    r"from wormsim\.netsim\.packet\.cc_\w+ import|from wormsim\.netsim\.cc_registry import"
    r"|from wormsim\.netsim\.packet import cc_"
)
_TABLES = "fields.py"  # builds the state and parameter tables from the registry's rows
_DRIVER = "run.py"  # the engine's Python driver: builds the kernel's parameters from the rows


def test_only_the_hooks_module_reaches_a_congestion_controls_module_or_state():
    """``packet/cc.py`` is the seam: the physics and Wormhole call its hooks, never a congestion
    control's module, code or state rows (each row's ``state``) directly; ``fields.py`` reads
    the registry only to build its tables, and ``run.py`` (Python, not kernel code) only to
    build the kernel's parameters."""
    found = []
    for path in sorted(KERNEL.rglob("*.py")):
        if path.name in ("cc.py", _DRIVER) or path.name.startswith("cc_"):
            continue
        if path.name == _TABLES:
            assert not _CC_STATE_ROW.search(path.read_text(encoding="utf-8"))
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _CC_STATE_ROW.search(line) or _CC_IMPORT.search(line):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert not found, "go through wormsim/netsim/packet/cc.py:\n" + "\n".join(found)


def test_every_congestion_control_module_exports_every_hook():
    """Each ``cc_<name>.py`` exports the same hooks (``<name>_<hook>``, jitted), so ``cc.py``
    dispatches every hook with one branch per congestion control."""
    from numba.core.registry import CPUDispatcher

    for c in reg.REGISTRY:
        mod = importlib.import_module(f"wormsim.netsim.packet.{c.kernel}")
        for h in reg.HOOKS:
            fn = getattr(mod, f"{c.name}_{h}", None)
            assert isinstance(fn, CPUDispatcher), (c.name, h)
            assert f"{c.name}_{h}" in mod.__all__, (c.name, h)


def test_the_seam_types_every_hook_and_names_no_control():
    """``packet/cc.py`` declares a signature for every hook and calls each through its address
    in ``P`` (``P.cc_fn_<hook>``); it names no control's module (the physics compiles without
    one)."""
    from wormsim.netsim.packet import cc
    from wormsim.netsim.packet.cc import HOOK_TYPES

    assert tuple(HOOK_TYPES) == reg.HOOKS
    text = (KERNEL / "cc.py").read_text(encoding="utf-8")
    calls = {getattr(v, "__name__", "") for v in vars(cc).values()}
    for h in reg.HOOKS:
        assert f"call_cc_fn_{h}" in calls, h  # a linked_call reading P.cc_fn_<hook>
    imported = {
        a.name if isinstance(node, ast.Import) else f"{node.module}.{a.name}"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for a in node.names
    }
    assert not [m for m in imported for c in reg.REGISTRY if c.kernel in m]


def test_every_control_links_every_hook():
    """Each control's hooks compile for the packet state with the declared
    return types, at distinct addresses."""
    import numba

    from tests.netsim.conftest import star
    from wormsim.netsim.packet import state as st
    from wormsim.netsim.packet.cc_link import HOOK_FIELDS, hook_addresses
    from wormsim.netsim.packet.run import _params

    topo = star(2)
    for c in reg.REGISTRY:
        P = _params(nc.NetworkSpec(cc=c.name), topo, 0)
        assert all(getattr(P, f) != 0 for f in HOOK_FIELDS), c.name
        assert len({getattr(P, f) for f in HOOK_FIELDS}) == len(HOOK_FIELDS), c.name
        again = hook_addresses(c.name, st.PACKET_STATE, numba.typeof(P))
        assert again == {f: getattr(P, f) for f in HOOK_FIELDS}
        assert P.int_stamp == c.int_stamp


def test_each_setting_is_a_spec_field_and_a_kernel_parameter():
    """A congestion control's own setting appears in ``NetworkSpec`` with its default and bounds
    and reaches the kernel's ``Params`` converted to kernel units."""
    from tests.netsim.conftest import star
    from wormsim.netsim.packet.fields import PARAMS
    from wormsim.netsim.packet.run import _params

    kernel = {p.name: p for p in PARAMS}
    topo = star(2)
    for s in reg.SETTINGS:
        field = nc.NetworkSpec.model_fields[s.field]
        if s.others is None:
            assert field.default == s.default and type(s.default) is field.annotation, s.field
        else:  # None until validated: its own default under its control, ``others`` elsewhere
            assert field.default is None and field.annotation == type(s.default) | None
            assert type(s.others) is type(s.default), s.field
        assert kernel[s.kernel].unit == s.unit, s.kernel
    for c in reg.REGISTRY:
        for s in c.settings:
            assert getattr(nc.NetworkSpec(cc=c.name), s.field) == s.default, s.field
            if s.others is not None:
                for other in reg.CC_NAMES:
                    if other != c.name:
                        assert getattr(nc.NetworkSpec(cc=other), s.field) == s.others
            if isinstance(s.default, bool):
                value = not s.default
            else:
                value = type(s.default)(s.default * 0.5) or 1
            net = nc.NetworkSpec(cc=c.name, **{s.field: value})
            got = getattr(_params(net, topo, 0), s.kernel)
            assert got == s.kernel_value(value) and type(got) is type(s.kernel_value(value))
    with pytest.raises(ValueError, match="u_target"):
        nc.NetworkSpec(u_target=1.5)
    with pytest.raises(ValueError, match="dctcp_rate_ai_bps"):
        nc.NetworkSpec(dctcp_rate_ai_bps=1.0)  # below MIN_RATE_BPS


def test_no_single_control_setting_is_wired_by_hand():
    """``packet/run.py`` builds no congestion control's own kernel parameter itself: each is a
    ``CcSetting`` of its registry row."""
    text = (KERNEL / "run.py").read_text(encoding="utf-8")
    for s in reg.SETTINGS:
        assert not re.search(rf"\b{s.kernel}\s*=", text), s.kernel
    fields = (KERNEL / "fields.py").read_text(encoding="utf-8")
    for s in reg.SETTINGS:
        assert f'Param("{s.kernel}"' not in fields, s.kernel


def test_every_state_row_is_in_the_kernel_state_table_once():
    from wormsim.netsim.packet.fields import STATE_TABLE

    for name, *_ in reg.STATE:  # the table refuses a name declared twice
        assert name in STATE_TABLE.names, name


def test_wormhole_reads_each_congestion_controls_traits_from_its_row():
    from tests.netsim.conftest import star
    from wormsim.netsim.packet.run import _params
    from wormsim.netsim.wormhole.plan import plan_wormhole
    from wormsim.netsim.wormhole.spec import WormholeSpec

    wh = WormholeSpec()
    for c in reg.REGISTRY:
        plan = plan_wormhole(wh, nc.NetworkSpec(cc=c.name))
        assert plan.partition_ports == c.wormhole_ports
        flow = WormholeSpec(skip_unit="flow")
        if c.delay_based:
            with pytest.raises(ValueError, match=f"network.cc = {c.name}"):
                flow.check_cc(c.name)
        else:
            flow.check_cc(c.name)
        P = _params(nc.NetworkSpec(cc=c.name), star(2), 0, plan)
        span_us = max((getattr(nc.NetworkSpec(cc=c.name), f) for f in c.timer_settings), default=0)
        assert P.wh_window * P.wh_ps >= 2 * span_us * 1e6
    assert {c.wormhole_ports for c in reg.REGISTRY} == {"data", "data_and_ack"}
