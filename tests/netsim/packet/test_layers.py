"""The packet kernel's two layers: the physics (the modules of ``wormsim/netsim/packet/``) reaches
Wormhole (``wormsim/netsim/packet/wormhole/``) only through its hooks module, and Wormhole's part
of the state is empty in packet mode."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import wormsim

PACKAGE = "wormsim.netsim.packet"
WORMHOLE = f"{PACKAGE}.wormhole"
HOOKS = f"{WORMHOLE}.hooks"
# found without importing the kernel: the check must run even when an import it forbids breaks
# the package's import (the two layers import each other in a cycle then)
# the engine's Python driver, run.py, is not physics: it calls Wormhole's entry points between
# kernel calls
PACKET_DIR = Path(wormsim.__file__).parent / "netsim" / "packet"
PHYSICS = sorted(p for p in PACKET_DIR.glob("*.py") if p.name != "run.py")


def _module(path: Path) -> str:
    return f"{PACKAGE}.{path.stem}" if path.stem != "__init__" else PACKAGE


def wormhole_imports(source: str, module: str) -> list[str]:
    """The ``wormsim.netsim.packet.wormhole`` modules (or the package itself) that ``source``, the
    text of module ``module``, imports, absolute or relative."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: -node.level]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import name``: the name may be a module (the wormhole package too)
            if base == WORMHOLE or WORMHOLE.startswith(base + "."):
                names = [f"{base}.{a.name}" for a in node.names]
            else:
                names = [base]
        else:
            continue
        found += [n for n in names if n == WORMHOLE or n.startswith(WORMHOLE + ".")]
    return found


def test_the_check_sees_every_form_of_import():
    m = f"{PACKAGE}.core"
    assert wormhole_imports("from wormsim.netsim.packet.wormhole import hooks", m) == [HOOKS]
    assert wormhole_imports("from wormsim.netsim.packet.wormhole.hooks import x", m) == [HOOKS]
    assert wormhole_imports("from .wormhole import shadow, hooks", m) == [
        f"{WORMHOLE}.shadow",
        HOOKS,
    ]
    assert wormhole_imports("from .wormhole.tunnel import tunnel", m) == [f"{WORMHOLE}.tunnel"]
    assert wormhole_imports("import wormsim.netsim.packet.wormhole.wh as wh", m) == [
        f"{WORMHOLE}.wh"
    ]
    assert wormhole_imports("def f():\n    from wormsim.netsim.packet.wormhole import skip\n", m)
    assert wormhole_imports("from wormsim.netsim.packet import wormhole", m) == [WORMHOLE]
    assert wormhole_imports("from . import wormhole, state", m) == [WORMHOLE]
    assert wormhole_imports("from wormsim.netsim.packet import state", m) == []


def test_physics_modules_import_only_the_hooks_of_wormhole():
    assert {p.stem for p in PHYSICS} >= {"core", "engine", "host", "switch", "fields", "state"}
    bad = {
        p.name: forbidden
        for p in PHYSICS
        if (forbidden := [n for n in wormhole_imports(p.read_text(), _module(p)) if n != HOOKS])
    }
    assert not bad, f"physics modules import Wormhole modules other than {HOOKS}: {bad}"


def test_the_state_is_the_physics_table_then_wormholes():
    from wormsim.netsim.packet.fields import PHYSICS_TABLE, STATE_TABLE, WORMHOLE_TABLE

    assert STATE_TABLE.names == PHYSICS_TABLE.names + WORMHOLE_TABLE.names
    assert len(WORMHOLE_TABLE) > 0 and len(PHYSICS_TABLE) > 0


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn"])
def test_wormholes_arrays_are_empty_in_packet_mode(cc):
    from tests.netsim.packet._kit import kit
    from wormsim.netsim.packet.fields import WORMHOLE_TABLE

    A = kit(cc, pairs=[(0, 1), (1, 2)], n_hosts=3).A
    sizes = {name: A[name].size for name in WORMHOLE_TABLE.names}
    assert all(n == 0 for n in sizes.values()), {k: n for k, n in sizes.items() if n}
    assert all(A[name].size > 0 for name in ("qp_una", "p_rate_bps", "ht_ps", "pk_type"))


def test_wormholes_arrays_are_sized_in_a_wormhole_run():
    from tests.netsim.packet._kit import kit
    from wormsim.netsim.packet.fields import WORMHOLE_TABLE
    from wormsim.netsim.wormhole.spec import WormholeSpec

    A = kit("hpcc", pairs=[(0, 1), (1, 2)], n_hosts=3, wormhole=WormholeSpec()).A
    assert all(A[name].size > 0 for name in WORMHOLE_TABLE.names)
    assert A["wh_lab"].shape == A["qp_una"].shape
    assert A["wh_pport"].shape == A["p_rate_bps"].shape
    assert (A["wh_mask"] == np.False_).all()
