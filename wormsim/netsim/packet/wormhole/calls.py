"""The calls of Wormhole's functions through their addresses in ``P`` (``P.wh_fn_<name>``).

Each name here calls the function of that name in :data:`~.handlers.WH_HANDLERS`, with its
arguments: callers write ``wh_calls.wh_sample(S, P, now)`` where they would call
``wh.wh_sample``, and do not compile it into themselves (see
:mod:`wormsim.netsim.packet.handlers` for why).
"""

from __future__ import annotations

from numba.core import types

from wormsim.netsim.packet.indirect import linked_call
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLERS

__all__ = list(WH_HANDLERS)


def _call(name: str):
    """The call of ``WH_HANDLERS[name]`` through ``P.wh_fn_<name>``."""
    return linked_call(f"wh_fn_{name}", types.none, WH_HANDLERS[name].args)


wh_sample = _call("wh_sample")
wh_partition = _call("wh_partition")
wh_on_start = _call("wh_on_start")
wh_on_finish = _call("wh_on_finish")
wh_land = _call("wh_land")
steady_entry = _call("steady_entry")
fs_sample = _call("fs_sample")
fs_on_start = _call("fs_on_start")
fs_on_change = _call("fs_on_change")
fs_land = _call("fs_land")
release_foreign = _call("release_foreign")
tunnel = _call("tunnel")
receive_deferred = _call("receive_deferred")
materialise = _call("materialise")
release_orphans = _call("release_orphans")
finish_mirrors = _call("finish_mirrors")
unpark_foreign = _call("unpark_foreign")
