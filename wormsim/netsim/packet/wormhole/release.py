"""Packets of other partitions off a partition's ports before they are frozen.

A skipped, replayed or parked partition's ports are frozen: their events move with it. Packets of
flows running elsewhere that wait in their queues or are on their links must not wait for it
(:func:`release_foreign`).
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.heap import heap_push_seq
from wormsim.netsim.packet.state import (
    C_HEAPN,
    C_WH_RELEASED,
    EV_ARRIVE,
    EV_TUNNEL,
    PK_PFC,
)
from wormsim.netsim.packet.switch import release_lo
from wormsim.netsim.packet.wormhole import calls as wh_calls
from wormsim.netsim.packet.wormhole.fields import PART_SKIPPED

__all__ = ["release_foreign"]


@njit(cache=True, inline="always")
def _foreign(S, p, r):
    """Whether packet ``p`` belongs to a flow outside partition ``r`` that must not wait for it:
    not a PFC frame (it reflects the queues it was sent for), not a packet of a parked shadow
    group (it keeps the time it was parked with). A skipped or replayed flow's packets on
    another partition's port count: a skip moves only its own ports, so they were never moved,
    and parked with ``r`` they waited for ``r``'s group to come back (MoE 32x22B/1024 at 1 %
    message size: a replayed leader's last ACK 294 µs late, its 46 shadows with it)."""
    if S.pk_type[p] == PK_PFC:
        return False
    lab = S.wh_lab[S.pk_flow[p]]
    return lab != r and (lab < 0 or S.wh_state[lab] != PART_SKIPPED or S.wh_qgrp[lab] < 0)


@njit(cache=True)
def _release_queue(S, P, r, port, low, now):
    """Take the packets foreign to partition ``r`` out of ``port``'s data queue (``low``) or
    high-priority queue, out of the buffer, and tunnel them past the port."""
    head = S.ql_head if low else S.qh_head
    tail = S.ql_tail if low else S.qh_tail
    prev = -1
    p = head[port]
    while p >= 0:
        nxt = S.pk_next[p]
        if _foreign(S, p, r):
            if prev < 0:
                head[port] = nxt
            else:
                S.pk_next[prev] = nxt
            if tail[port] == p:
                tail[port] = prev
            if low:
                release_lo(S, P, port, p, now)
            else:
                S.qh_bytes[port] -= S.pk_size[p]
            wh_calls.tunnel(S, P, port, p, now)
            S.cnt[C_WH_RELEASED] += 1
        else:
            prev = p
        p = nxt


@njit(cache=True)
def release_foreign(S, P, r, now):
    """Before the ports of partition ``r`` (``wh_pport == r``) are frozen (skipped, replayed or
    parked), take out the packets of flows running elsewhere that they hold (:func:`_foreign`),
    so that none waits for the skip to end or the group to come back.

    With data-port partitions only control packets (ACKs, NACKs, CNPs) of other partitions
    cross these ports. Those waiting in a port's queue leave the buffer and are tunnelled past it
    (:func:`~.tunnel.tunnel`); those already on the port's link keep their
    arrival time (the link's first packet, whose arrival is in the heap, has that event turned in
    place into a tunnel event, same time and sequence number, so the heap stays valid). Parked
    with the port, a leader's ACK in flight on its shadow's NIC link waited for the shadow, which
    waited for the leader to finish (GPT-175B/1024 at 1 % message size)."""
    if not P.wh_data_only:
        return
    npt = S.p_free_ps.shape[0]
    for port in range(npt):
        if S.wh_pport[port] != r:
            continue
        # the data queue, and a switch's control queue (control packets share the data queue
        # unless ACK_HIGH_PRIO)
        for hi in range(2 if S.p_sw[port] else 1):
            _release_queue(S, P, r, port, hi == 1, now)
        h = S.lk_head[port]
        if h < 0:
            continue
        prev = h
        p = S.pk_next[h]
        while p >= 0:  # behind the first: out of the list, arriving when they would have
            nxt = S.pk_next[p]
            if _foreign(S, p, r):
                S.pk_next[prev] = nxt
                if S.lk_tail[port] == p:
                    S.lk_tail[port] = prev
                S.pk_inport[p] = port
                heap_push_seq(S.cnt, S.ht_ps, S.hs, S.he, S.ho, S.pk_at_ps[p], S.pk_as[p],
                              EV_TUNNEL | (p << 8), np.int64(-1))  # fmt: skip
                S.cnt[C_WH_RELEASED] += 1
            else:
                prev = p
            p = nxt
        if _foreign(S, h, r):
            code = EV_ARRIVE | (h << 8)
            for i in range(S.cnt[C_HEAPN]):
                if S.he[i] == code and S.ho[i] == port:
                    S.he[i] = EV_TUNNEL | (h << 8)
                    S.ho[i] = -1
                    break
            S.pk_inport[h] = port
            S.cnt[C_WH_RELEASED] += 1
            nx = S.pk_next[h]
            S.lk_head[port] = nx
            if nx < 0:
                S.lk_tail[port] = -1
            else:  # the next packet in flight becomes the link's first, in the heap
                heap_push_seq(S.cnt, S.ht_ps, S.hs, S.he, S.ho, S.pk_at_ps[nx], S.pk_as[nx],
                              EV_ARRIVE | (nx << 8), port)  # fmt: skip
