"""The calls of Wormhole's functions through their addresses in ``P`` (``P.wh_fn_<name>``).

Each function here has the signature of the function it reaches
(:data:`~.handlers.WH_HANDLERS`): callers write ``calls.wh_sample(S, P, now)`` where they would
call ``wh.wh_sample``, and do not compile it into themselves (see
:mod:`wormsim.netsim.packet.handlers` for why).
"""

from __future__ import annotations

from numba.core import types

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.indirect import indirect_call
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLERS

__all__ = list(WH_HANDLERS)


def _call(name: str):
    """The intrinsic that calls Wormhole's function ``name`` at its address."""
    return indirect_call(types.none, WH_HANDLERS[name].args)


_WH_SAMPLE = _call("wh_sample")


@njit(inline="always")
def wh_sample(S, P, now):
    """``wh.wh_sample``."""
    _WH_SAMPLE(P.wh_fn_wh_sample, (S, P, now))


_WH_PARTITION = _call("wh_partition")


@njit(inline="always")
def wh_partition(S, P, now):
    """``wh.wh_partition``."""
    _WH_PARTITION(P.wh_fn_wh_partition, (S, P, now))


_WH_ON_START = _call("wh_on_start")


@njit(inline="always")
def wh_on_start(S, P, q, now):
    """``wh.wh_on_start``."""
    _WH_ON_START(P.wh_fn_wh_on_start, (S, P, q, now))


_WH_ON_FINISH = _call("wh_on_finish")


@njit(inline="always")
def wh_on_finish(S, P, q, now):
    """``wh.wh_on_finish``."""
    _WH_ON_FINISH(P.wh_fn_wh_on_finish, (S, P, q, now))


_WH_LAND = _call("wh_land")


@njit(inline="always")
def wh_land(S, P, r, now):
    """``wh.wh_land``."""
    _WH_LAND(P.wh_fn_wh_land, (S, P, r, now))


_STEADY_ENTRY = _call("steady_entry")


@njit(inline="always")
def steady_entry(S, P, r, now):
    """``wh._steady_entry``."""
    _STEADY_ENTRY(P.wh_fn_steady_entry, (S, P, r, now))


_FS_SAMPLE = _call("fs_sample")


@njit(inline="always")
def fs_sample(S, P, now):
    """``flowskip.fs_sample``."""
    _FS_SAMPLE(P.wh_fn_fs_sample, (S, P, now))


_FS_ON_START = _call("fs_on_start")


@njit(inline="always")
def fs_on_start(S, P, q, now):
    """``flowskip.fs_on_start``."""
    _FS_ON_START(P.wh_fn_fs_on_start, (S, P, q, now))


_FS_ON_CHANGE = _call("fs_on_change")


@njit(inline="always")
def fs_on_change(S, P, q, now):
    """``flowskip.fs_on_change``."""
    _FS_ON_CHANGE(P.wh_fn_fs_on_change, (S, P, q, now))


_FS_LAND = _call("fs_land")


@njit(inline="always")
def fs_land(S, P, arg, now):
    """``flowskip.fs_land``."""
    _FS_LAND(P.wh_fn_fs_land, (S, P, arg, now))


_RELEASE_FOREIGN = _call("release_foreign")


@njit(inline="always")
def release_foreign(S, P, r, now):
    """``release.release_foreign``."""
    _RELEASE_FOREIGN(P.wh_fn_release_foreign, (S, P, r, now))


_TUNNEL = _call("tunnel")


@njit(inline="always")
def tunnel(S, P, port, p, now):
    """``tunnel.tunnel``."""
    _TUNNEL(P.wh_fn_tunnel, (S, P, port, p, now))


_RECEIVE_DEFERRED = _call("receive_deferred")


@njit(inline="always")
def receive_deferred(S, P, p, now):
    """``tunnel.receive_deferred``."""
    _RECEIVE_DEFERRED(P.wh_fn_receive_deferred, (S, P, p, now))


_MATERIALISE = _call("materialise")


@njit(inline="always")
def materialise(S, P, g, now):
    """``shadow.materialise``."""
    _MATERIALISE(P.wh_fn_materialise, (S, P, g, now))


_RELEASE_ORPHANS = _call("release_orphans")


@njit(inline="always")
def release_orphans(S, P, now):
    """``shadow.release_orphans``."""
    _RELEASE_ORPHANS(P.wh_fn_release_orphans, (S, P, now))


_FINISH_MIRRORS = _call("finish_mirrors")


@njit(inline="always")
def finish_mirrors(S, P, m, now):
    """``shadow.finish_mirrors``."""
    _FINISH_MIRRORS(P.wh_fn_finish_mirrors, (S, P, m, now))


_UNPARK_FOREIGN = _call("unpark_foreign")


@njit(inline="always")
def unpark_foreign(S, P, port, q):
    """``shadow.unpark_foreign``."""
    _UNPARK_FOREIGN(P.wh_fn_unpark_foreign, (S, P, port, q))
