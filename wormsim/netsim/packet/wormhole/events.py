"""Wormhole in the event loop: its event types, its sampler's start, and the reactions of the
hooks (:mod:`.hooks`) that span several Wormhole modules.

Wormhole's event types are the codes from ``EV_FIRST_WH`` on (:mod:`wormsim.netsim.packet.state`);
the loop hands each to :func:`dispatch`:

- ``EV_WH``: the sampler's tick (:func:`~.wh.wh_sample`), every ``P.wh_ps``;
- ``EV_TUNNEL``: a control packet tunnelled past a frozen port arrives at the port's peer
  (:mod:`.tunnel`);
- ``EV_DEFER``: a control packet held for a skipped QP is due at its sender;
- ``EV_LAND``: a skipped partition's skip ends (its phantom ACK load goes);
- ``EV_FLAND``: a flow skip ends (:mod:`.flowskip`).
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import calls
from wormsim.netsim.packet.core import push
from wormsim.netsim.packet.heap import heap_pop
from wormsim.netsim.packet.state import (
    C_FS_PEND,
    C_WH_DIRTY,
    C_WH_IDLE,
    C_WH_LIVE,
    C_WH_MEMO,
    EV_DEFER,
    EV_FLAND,
    EV_LAND,
    EV_TUNNEL,
    EV_WH,
    PK_DATA,
)
from wormsim.netsim.packet.wormhole import calls as wh_calls
from wormsim.netsim.packet.wormhole.flowskip import fs_stale, live_events
from wormsim.netsim.packet.wormhole.skip import PARK_PS
from wormsim.netsim.packet.wormhole.tunnel import frozen_for
from wormsim.netsim.packet.wormhole.wh import sampler_needed

__all__ = [
    "PARKED",
    "start",
    "heap_room",
    "drop_stale_landing",
    "parked_only",
    "dispatch",
    "packet_at_port",
    "ack_at_sender",
]

PARKED = PARK_PS // 2
"""Events this late are parked shadows' (or stale ones they left): past the 2.3e18 ps clock
bound."""


@njit(cache=True)
def start(S, P, now):
    """Start the sampler: its first tick one period after ``now``, partitions to compute."""
    S.cnt[C_WH_DIRTY] = 1
    push(S, now + P.wh_ps, EV_WH, 0, -1)


@njit(cache=True, inline="always")
def heap_room(S):
    """Heap slots kept free for the memo bridge's parks, which may tunnel every packet in
    flight."""
    return 2 * S.pk_type.shape[0]


@njit(cache=True, inline="always")
def drop_stale_landing(S):
    """Pop the top event if it is the landing of a rolled-back flow skip; True if it did."""
    if (S.he[0] & 0xFF) == EV_FLAND and fs_stale(S, S.he[0] >> 8):
        heap_pop(S.cnt, S.ht_ps, S.hs, S.he, S.ho)
        S.cnt[C_FS_PEND] -= 1
        return True
    return False


@njit(cache=True, inline="always")
def parked_only(S, now):
    """Whether the top event (due at ``now``) is parked while no shadow is: only events left
    behind by materialised shadows remain (stale, none can act)."""
    return now >= PARKED and S.cnt[C_WH_LIVE] == 0


@njit(cache=True, inline="always")
def dispatch(S, P, typ, arg, now):
    """Handle Wormhole event ``typ`` with argument ``arg`` at ``now``; True when the memo bridge
    has work (lookups or inserts pending)."""
    if typ == EV_TUNNEL:
        calls.arrive(S, P, arg, S.pk_inport[arg], now)
    elif typ == EV_DEFER:
        wh_calls.receive_deferred(S, P, arg, now)
    elif typ == EV_LAND:
        wh_calls.wh_land(S, P, arg, now)
    elif typ == EV_FLAND:
        S.cnt[C_FS_PEND] -= 1
        wh_calls.fs_land(S, P, arg, now)
    elif typ == EV_WH:
        wh_calls.wh_sample(S, P, now)
        # stop once only the monitor sampler (if any) is left, so the two do not keep
        # each other alive
        if live_events(S) > (1 if P.sample_ps > 0 else 0) and (
            S.ht_ps[0] < PARKED or S.cnt[C_WH_LIVE] > 0
        ):
            if sampler_needed(S):
                push(S, now + P.wh_ps, EV_WH, 0, -1)
            else:  # no network flow: the next flow start wakes it (wh.wake_sampler)
                S.cnt[C_WH_IDLE] = 1
        if S.cnt[C_WH_MEMO]:
            S.cnt[C_WH_MEMO] = 0
            return True
    return False


@njit(cache=True, inline="always")
def packet_at_port(S, P, port, p, now):
    """Packet ``p`` is about to be queued at ``port``: a control packet of another partition
    reaching a frozen port is tunnelled past it (True); otherwise a parked port that ``p``'s flow
    is not of moves back to now (:func:`~.shadow.unpark_foreign`)."""
    q = S.pk_flow[p]
    if S.pk_type[p] != PK_DATA and frozen_for(S, P, port, q, now):
        wh_calls.tunnel(S, P, port, p, now)
        return True
    if S.wh_pgrp[port] >= 0:
        wh_calls.unpark_foreign(S, P, port, np.int64(q))
    return False


@njit(cache=True, inline="always")
def ack_at_sender(S, P, q, seq, now):
    """An ACK or NACK up to ``seq`` reached QP ``q``'s sender: True if it is stale (with
    data-port partitions: held in a frozen queue while later ones were tunnelled past it; in
    order delivery never produces one, and its INT would be older than what the congestion
    control last saw); else the time of an ACK that advances ``qp_una`` is the sampler's."""
    if P.wh_data_only and seq < S.qp_una[q]:
        return True
    if seq > S.qp_una[q]:
        S.wh_tack_ps[q] = now
    return False
