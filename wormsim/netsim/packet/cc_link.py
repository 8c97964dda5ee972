"""Link a run's congestion control into the kernel: compile its hooks, hand their addresses to
``P``.

The physics calls a congestion control only through :mod:`~wormsim.netsim.packet.cc`, which
jumps to ``P.cc_fn_<hook>``. :func:`hook_addresses` compiles (or loads from numba's cache) the
control's ``<name>_<hook>`` functions for the run's state and parameter types and returns their
machine-code addresses; :func:`~wormsim.netsim.packet.run.build_state` puts them in ``P``. A run
so compiles one control, and the physics never recompiles for another.
"""

from __future__ import annotations

import importlib
from functools import cache

from numba.core import types

from wormsim.netsim.cc_registry import BY_NAME, HOOKS
from wormsim.netsim.packet.cc import HOOK_TYPES
from wormsim.netsim.packet.state import ParamsPtrType, StateType

__all__ = ["hook_addresses", "HOOK_FIELDS"]

HOOK_FIELDS: tuple[str, ...] = tuple(f"cc_fn_{h}" for h in HOOKS)
"""The ``P`` fields that hold the hooks' addresses, in the order of ``cc_registry.HOOKS``."""


@cache
def hook_addresses(cc: str, state: StateType, params: types.Type) -> dict[str, int]:
    """The ``P.cc_fn_<hook>`` values of a run of congestion control ``cc``.

    Parameters
    ----------
    cc : the ``network.cc`` name (a :data:`~wormsim.netsim.cc_registry.REGISTRY` row).
    state : the numba type of the run's state (``state.PACKET_STATE`` or ``WORMHOLE_STATE``).
    params : the numba type of the run's ``Params`` (or ``WhParams``) tuple.

    Returns
    -------
    dict
        ``cc_fn_<hook>`` -> the address of that hook compiled for these types.

    Raises
    ------
    TypeError
        If a hook compiles to another return type than :data:`~.cc.HOOK_TYPES` declares (the
        kernel would read its result wrongly).
    """
    row = BY_NAME[cc]
    module = importlib.import_module(f"wormsim.netsim.packet.{row.kernel}")
    pointer = ParamsPtrType(params)
    out = {}
    for hook, field in zip(HOOKS, HOOK_FIELDS, strict=True):
        restype, extra = HOOK_TYPES[hook]
        fn = getattr(module, f"{row.name}_{hook}")
        argtypes = (state, pointer, *extra)
        fn.compile(argtypes)
        compiled = fn.overloads[argtypes]
        if compiled.signature.return_type != restype:
            raise TypeError(
                f"{row.kernel}.{row.name}_{hook} returns {compiled.signature.return_type}, "
                f"the kernel calls it for {restype}"
            )
        out[field] = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
    return out
