"""The calls of Wormhole's functions through their addresses in ``P`` (``P.wh_fn_<name>``).

Each name here calls the function of that name in :data:`~.handlers.WH_HANDLERS`, with its
arguments: callers write ``wh_calls.wh_sample(S, P, now)`` where they would call
``wh.wh_sample``, and do not compile it into themselves (see
:mod:`wormsim.netsim.packet.handlers` for why).
"""

from __future__ import annotations

from wormsim.netsim.packet.indirect import linked_calls
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLERS

__all__ = list(WH_HANDLERS)

_CALLS = linked_calls(WH_HANDLERS, "wh_fn_")

wh_sample = _CALLS["wh_sample"]
wh_partition = _CALLS["wh_partition"]
wh_on_start = _CALLS["wh_on_start"]
wh_on_finish = _CALLS["wh_on_finish"]
wh_land = _CALLS["wh_land"]
steady_entry = _CALLS["steady_entry"]
fs_sample = _CALLS["fs_sample"]
fs_on_start = _CALLS["fs_on_start"]
fs_on_change = _CALLS["fs_on_change"]
fs_land = _CALLS["fs_land"]
release_foreign = _CALLS["release_foreign"]
tunnel = _CALLS["tunnel"]
receive_deferred = _CALLS["receive_deferred"]
materialise = _CALLS["materialise"]
release_orphans = _CALLS["release_orphans"]
finish_mirrors = _CALLS["finish_mirrors"]
unpark_foreign = _CALLS["unpark_foreign"]
