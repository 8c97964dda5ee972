"""Wormhole's kernel layer: partitions, steadiness, skips, shadows, tunnels, flow skips, phantom
loads, mirrors, conflict graphs and the sampler, over the packet physics of
:mod:`wormsim.netsim.packet`.

The physics calls into this layer only through :mod:`.hooks`. This layer's modules import the
physics, so the hooks reach them as attributes of this package, which imports a module the first
time it is asked for one (:func:`__getattr__`): numba resolves those attributes when it compiles
the physics, after every module is loaded.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = [
    "conflicts",
    "entry",
    "events",
    "fairness",
    "fields",
    "flowphantom",
    "flowskip",
    "hooks",
    "mirror",
    "partition",
    "phantom",
    "release",
    "shadow",
    "skip",
    "steady",
    "tunnel",
    "wh",
]


def __getattr__(name: str) -> ModuleType:
    """Submodule ``name``, imported on first use."""
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
