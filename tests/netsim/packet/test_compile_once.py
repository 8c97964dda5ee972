"""Each kernel function compiles once per mode: call sites pass typed values, never a literal
or a narrower integer that would make numba compile the function again for that type; and the
event handlers called through an address (``packet.handlers``) are linked into no other
function's code.

The probe compiles on an empty cache in a fresh process (a cached entry point loads its callees'
code with it, so their dispatchers would show nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wormsim.netsim.packet.handlers import HANDLERS
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLERS

_PROBE = """
import json, sys
from numba.core.registry import CPUDispatcher
from wormsim.netsim.packet.run import _warm
_warm(sys.argv[1] == "wormhole")
seen, owner, linked = {}, {}, set()
for name, mod in list(sys.modules.items()):
    if name.startswith("wormsim"):
        for v in vars(mod).values():
            if isinstance(v, CPUDispatcher) and v.overloads:
                key = f"{v.py_func.__module__}.{v.py_func.__qualname__}"
                seen[key] = [[str(t) for t in sig] for sig in v.overloads]
                for cres in v.overloads.values():
                    owner[id(cres.library)] = key
                    linked |= {id(lib) for lib in cres.library._linking_libraries}
print(json.dumps({"seen": seen, "linked": sorted({owner[i] for i in linked if i in owner})}))
"""


@pytest.mark.slow  # a cold compile of its own: 35 s (packet), 100 s (Wormhole)
@pytest.mark.parametrize("mode", ["packet", "wormhole"])
def test_every_kernel_function_compiles_once(mode: str, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], env=env, capture_output=True, text=True, check=True
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    compiled = found["seen"]
    assert len(compiled) > 40, "the probe found no kernels"
    twice = {name: sigs for name, sigs in compiled.items() if len(sigs) > 1}
    assert not twice, f"compiled for several argument types: {twice}"
    table = {**HANDLERS, **(WH_HANDLERS if mode == "wormhole" else {})}
    handlers = {f"wormsim.netsim.packet.{h.module}.{h.function}" for h in table.values()}
    assert handlers <= set(compiled), "a handler was not compiled"
    assert not handlers & set(found["linked"]), "a handler was compiled into its caller"
