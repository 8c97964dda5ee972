"""The physics' event handlers that the kernels call through an address, and their linking.

numba compiles a jitted callee into every caller's module again (see
:mod:`~wormsim.netsim.packet.indirect`), so the event loop, which reaches every handler, used to
recompile the whole physics, and each handler the handlers below it: a cold compile optimised and
code-generated the same code about four times over. The handlers in :data:`HANDLERS` are called
through ``P.fn_<name>`` instead (:mod:`~wormsim.netsim.packet.calls` holds the calls): each
compiles once, on its own, and an edit to one recompiles that handler and whatever calls it
directly, not the loop. Small helpers on the hot path (the heap, ``transmit``, the rate
limiter) stay direct calls, where inlining pays.

A handler is added here (its module, function and argument types after ``(S, P)``) and as one
line in ``calls.py`` (its call, :func:`~wormsim.netsim.packet.indirect.linked_call`);
``run._linked`` fills the ``P`` fields with :func:`handler_addresses` when a run's parameters
are built.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import NamedTuple

from numba.core import types

__all__ = ["Handler", "HANDLERS", "HANDLER_FIELDS", "handler_addresses", "link_addresses"]

_I = types.int64


class Handler(NamedTuple):
    """One event handler called through an address: ``wormsim.netsim.packet.<module>.<function>``
    with the argument types after ``(S, P)``; every handler returns nothing."""

    module: str  # under ``wormsim.netsim.packet`` (``wormhole.wh`` for Wormhole's)
    function: str
    args: tuple[types.Type, ...]


HANDLERS: dict[str, Handler] = {
    "arrive": Handler("engine", "arrive", (_I, _I, _I)),  # p, port, now
    "switch_receive": Handler("switch", "switch_receive", (_I, _I, _I)),  # p, in_port, now
    "switch_dequeue": Handler("switch", "switch_dequeue", (_I, _I)),  # port, now
    "send_pfc": Handler("switch", "_send_pfc", (_I, _I, _I)),  # port, pause, now
    "nic_dequeue": Handler("nic", "nic_dequeue", (_I, _I)),  # port, now
    "receive_ack": Handler("host", "receive_ack", (_I, _I)),  # p, now
    "receive_data": Handler("host", "_receive_data", (_I, _I)),  # p, now
    "dag_done_event": Handler("dag_exec", "dag_done_event", (_I, _I)),  # v, now
    "fluid_event": Handler("dag_exec", "fluid_event", (_I, _I)),  # gen, now
    "qp_start_event": Handler("dag_exec", "qp_start_event", (_I, _I)),  # arg, now
    "finish_node": Handler("dag_exec", "finish_node", (_I, _I)),  # v, now
    "release": Handler("dag_exec", "release", (_I, _I)),  # v, now
    "fluid_rates": Handler("dag_exec", "_fluid_rates", (_I,)),  # now
}
"""The handlers called through ``P.fn_<name>``: name -> where it is and what it takes."""


HANDLER_FIELDS: tuple[str, ...] = tuple(f"fn_{name}" for name in HANDLERS)
"""The ``P`` fields that hold the handlers' addresses, in the order of :data:`HANDLERS`."""


def link_addresses(
    table: dict[str, Handler], prefix: str, state: types.Type, params: types.Type
) -> dict[str, int]:
    """The ``P.<prefix><name>`` values of ``table``'s handlers, each compiled (or loaded from
    numba's cache) for the run's state and parameter types.

    Parameters
    ----------
    table : name -> :class:`Handler` (:data:`HANDLERS`, or Wormhole's ``WH_HANDLERS``).
    prefix : the address fields' prefix (``fn_``, ``wh_fn_``).
    state : the numba type of the run's state (``state.PACKET_STATE`` or ``WORMHOLE_STATE``).
    params : the numba type of the run's ``Params`` (or ``WhParams``) tuple.

    Raises
    ------
    TypeError
        If a handler compiles to a return value (the calls expect none).
    """
    from wormsim.netsim.packet.state import ParamsPtrType

    pointer = ParamsPtrType(params)
    out = {}
    for name, row in table.items():
        fn = getattr(importlib.import_module(f"wormsim.netsim.packet.{row.module}"), row.function)
        argtypes = (state, pointer, *row.args)
        fn.compile(argtypes)
        compiled = fn.overloads[argtypes]
        if compiled.signature.return_type != types.none:
            raise TypeError(f"{row.module}.{row.function} returns a value; handlers return none")
        out[f"{prefix}{name}"] = compiled.library.get_pointer_to_function(
            compiled.fndesc.llvm_func_name
        )
    return out


@cache
def handler_addresses(state: types.Type, params: types.Type) -> dict[str, int]:
    """The ``P.fn_<name>`` values of a run (:func:`link_addresses` of :data:`HANDLERS`)."""
    return link_addresses(HANDLERS, "fn_", state, params)
