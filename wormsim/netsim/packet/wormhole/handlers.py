"""Wormhole's functions that the kernels call through an address, as the physics' event handlers
(:mod:`wormsim.netsim.packet.handlers`, which says why): its sampler, its reactions to a flow's
start and end, its partitioning, landings, tunnels and shadows are each compiled once, on their
own, for a Wormhole state, instead of once per caller above them. The addresses live in
Wormhole's scalars (``P.wh_fn_<name>``, :data:`WH_HANDLER_FIELDS`); the calls are in
:mod:`~wormsim.netsim.packet.wormhole.calls`.
"""

from __future__ import annotations

from functools import cache

from numba.core import types

from wormsim.netsim.packet.handlers import Handler, link_addresses

__all__ = ["WH_HANDLERS", "WH_HANDLER_FIELDS", "wh_handler_addresses"]

_I = types.int64

WH_HANDLERS: dict[str, Handler] = {
    "wh_sample": Handler("wormhole.wh", "wh_sample", (_I,)),  # now
    "wh_partition": Handler("wormhole.wh", "wh_partition", (_I,)),  # now
    "wh_on_start": Handler("wormhole.wh", "wh_on_start", (_I, _I)),  # q, now
    "wh_on_finish": Handler("wormhole.wh", "wh_on_finish", (_I, _I)),  # q, now
    "wh_land": Handler("wormhole.wh", "wh_land", (_I, _I)),  # r, now
    "steady_entry": Handler("wormhole.wh", "_steady_entry", (_I, _I)),  # r, now
    "fs_sample": Handler("wormhole.flowskip", "fs_sample", (_I,)),  # now
    "fs_on_start": Handler("wormhole.flowskip", "fs_on_start", (_I, _I)),  # q, now
    "fs_on_change": Handler("wormhole.flowskip", "fs_on_change", (_I, _I)),  # q, now
    "fs_land": Handler("wormhole.flowskip", "fs_land", (_I, _I)),  # arg, now
    "release_foreign": Handler("wormhole.release", "release_foreign", (_I, _I)),  # r, now
    "tunnel": Handler("wormhole.tunnel", "tunnel", (_I, _I, _I)),  # port, p, now
    "receive_deferred": Handler("wormhole.tunnel", "receive_deferred", (_I, _I)),  # p, now
    "materialise": Handler("wormhole.shadow", "materialise", (_I, _I)),  # g, now
    "release_orphans": Handler("wormhole.shadow", "release_orphans", (_I,)),  # now
    "finish_mirrors": Handler("wormhole.shadow", "finish_mirrors", (_I, _I)),  # m, now
    "unpark_foreign": Handler("wormhole.shadow", "unpark_foreign", (_I, _I)),  # port, q
}
"""Wormhole's functions called through ``P.wh_fn_<name>``: name -> where and what it takes."""

WH_HANDLER_FIELDS: tuple[str, ...] = tuple(f"wh_fn_{name}" for name in WH_HANDLERS)
"""The ``P`` fields that hold their addresses, in the order of :data:`WH_HANDLERS`."""


@cache
def wh_handler_addresses(state: types.Type, params: types.Type) -> dict[str, int]:
    """The ``P.wh_fn_<name>`` values of a Wormhole run (each function compiled for its types)."""
    return link_addresses(WH_HANDLERS, "wh_fn_", state, params)
