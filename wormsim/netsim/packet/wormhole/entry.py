"""Wormhole's kernel entry points called from Python between event-loop calls (the memo bridge,
:class:`~wormsim.netsim.wormhole.bridge.MemoBridge`): move events in time, replay a stored
transient, park, remap and materialise shadow partitions.

Each converts ``S`` and ``P`` to their raw views first, as
:func:`~wormsim.netsim.packet.engine.run_kernel` does.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.state import C_NOW, raw_params
from wormsim.netsim.packet.wormhole import calls as wh_calls
from wormsim.netsim.packet.wormhole.shadow import park, remap
from wormsim.netsim.packet.wormhole.skip import plan_hit, shift_mask, wh_apply_hit

__all__ = [
    "shift_owner_events",
    "apply_memo_hit",
    "park_shadow",
    "remap_shadow",
    "materialise_group",
]


@njit(cache=True)
def shift_owner_events(S, owner_mask, dt):
    """Shift every pending event whose owner is in ``owner_mask`` by ``dt`` ps."""
    return shift_mask(S, owner_mask, dt)


@njit(cache=True)
def apply_memo_hit(S, P_, r, qs, sizef, rend, tconv, ccs):
    """Replay a stored transient on partition ``r`` (see :func:`~.skip.plan_hit` and
    :func:`~.skip.wh_apply_hit`), after taking the packets of flows running elsewhere off its
    ports (:func:`~.release.release_foreign`); returns False, changing nothing, if the entry
    does not fit."""
    P = raw_params(P_)
    dti, frac = plan_hit(S, P, qs, sizef, rend, tconv)
    if dti <= 0:
        return False
    wh_calls.release_foreign(S, P, r, S.cnt[C_NOW])
    wh_apply_hit(S, P, r, qs, sizef, rend, tconv, ccs, dti, frac)
    return True


@njit(cache=True)
def park_shadow(S, P_, f, lead, qs, leads, first):
    """Make partition ``f`` a shadow of leader ``lead`` (see :func:`~.shadow.park`), after
    taking the packets of flows running elsewhere off its ports
    (:func:`~.release.release_foreign`)."""
    P = raw_params(P_)
    wh_calls.release_foreign(S, P, f, S.cnt[C_NOW])
    park(S, P, f, lead, qs, leads, first)


@njit(cache=True)
def remap_shadow(S, P_, r, g, lead, qs, leads, first):
    """Keep re-formed shadow ``r`` parked behind ``lead`` (see :func:`~.shadow.remap`)."""
    P = raw_params(P_)
    remap(S, P, r, g, lead, qs, leads, first)


@njit(cache=True)
def materialise_group(S, P_, g):
    """Bring parked group ``g`` back to now (see :func:`~.shadow.materialise`)."""
    P = raw_params(P_)
    wh_calls.materialise(S, P, g, S.cnt[C_NOW])
