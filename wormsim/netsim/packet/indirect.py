"""Calls through an address: how the physics reaches code it does not compile into itself.

numba links every jitted callee into its caller's LLVM module and optimises and code-generates
the whole module again, so a function deep in a call chain is compiled once per caller above it.
A call through an address breaks that chain: the callee is compiled once, on its own, and the
caller holds only the call. :func:`linked_call` makes the intrinsic that does it, in numba's
own calling convention (the callee's errors propagate), reading the address from a field of
``P`` and casting the arguments to a fixed signature, so the callee compiles once for it.

The congestion control's hooks (:mod:`~wormsim.netsim.packet.cc`) and the physics' event
handlers (:mod:`~wormsim.netsim.packet.calls`) are called this way; their addresses sit in
``P``.
"""

from __future__ import annotations

from numba.core import cgutils, types
from numba.core.extending import intrinsic

from wormsim.netsim.packet.state import ParamsPtrType

__all__ = ["linked_call", "linked_calls"]


def _accepts(given: types.Type, wanted: types.Type) -> bool:
    """Whether an argument of type ``given`` passes as ``wanted`` without losing anything."""
    if isinstance(wanted, types.Array):
        return (
            isinstance(given, types.Array)
            and given.dtype == wanted.dtype
            and given.ndim == wanted.ndim
        )
    if isinstance(wanted, types.Float):
        return isinstance(given, (types.Integer, types.Float, types.Boolean))
    return isinstance(given, (types.Integer, types.Boolean))


def linked_call(field: str, restype: types.Type, wanted: tuple[types.Type, ...]):
    """An intrinsic ``call(S, P, *args)`` that calls the function whose address is ``P.<field>``,
    compiled for ``(S, P, *wanted)`` and returning ``restype``; the arguments after ``(S, P)`` are
    cast to ``wanted``.

    Parameters
    ----------
    field : the ``P`` field holding the address (``fn_arrive``, ``cc_fn_on_ack`` ...).
    restype : the callee's numba return type (``types.none`` for none).
    wanted : the numba types of its arguments after the state and the parameters.
    """

    @intrinsic
    def call(typingctx, S, P, *args):
        given = tuple(args)
        if not (
            isinstance(P, ParamsPtrType)
            and field in P.pt.fields
            and len(given) == len(wanted)
            and all(_accepts(g, w) for g, w in zip(given, wanted, strict=True))
        ):
            return None
        argtypes = (S, P, *wanted)

        def codegen(context, builder, sig, llargs):
            s, p, packed = llargs  # the arguments after (S, P) come as one star-args tuple
            fnaddr = context.get_getattr(P, field)(context, builder, P, p, field)
            values = [s, p] + [
                context.cast(builder, builder.extract_value(packed, i), g, w)
                for i, (g, w) in enumerate(zip(given, wanted, strict=True))
            ]
            fnty = context.call_conv.get_function_type(restype, argtypes)
            fn = builder.inttoptr(fnaddr, fnty.as_pointer())
            status, result = context.call_conv.call_function(builder, fn, restype, argtypes, values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return result if restype != types.none else context.get_dummy_value()

        return restype(S, P, types.StarArgTuple.from_types(given)), codegen

    call.__name__ = f"call_{field}"
    return call


def linked_calls(table: dict, prefix: str) -> dict:
    """:func:`linked_call` of every row of a handler table (``name -> Handler``, each returning
    nothing), reading ``P.<prefix><name>``: name -> its call."""
    return {name: linked_call(prefix + name, types.none, row.args) for name, row in table.items()}
