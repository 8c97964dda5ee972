"""Host receive path: data -> ACK/NACK (go-back-N receiver), ACK/NACK -> sender QP and CC.

As ``RdmaHw::ReceiveUdp``/``ReceiveAck`` of HPCC ns-3: an ACK (or NACK for a gap, at most one per
NACK interval for the same expected sequence) carries the next expected sequence, the data
packet's INT (or timestamp) and a CNP flag if the data packet was ECN-marked. The sender's
completion time (``fct``) is when the ACK covering the last byte arrives.
"""

from __future__ import annotations

from numba import njit

from wormsim.netsim.packet.cc import cc_on_ack, cc_on_finish
from wormsim.netsim.packet.core import is_ghost, pkt_free
from wormsim.netsim.packet.dag_exec import finish_node
from wormsim.netsim.packet.nic import nic_dequeue
from wormsim.netsim.packet.state import (
    C_NACKS,
    C_WH_BYTES,
    C_WH_DIRTY,
    C_WH_EMPTIED,
    C_WH_MIRRORED,
    C_WH_SHADOW_BYTES,
    HOLD_WAITING,
    PK_ACK,
    PK_DATA,
    PK_NACK,
)
from wormsim.netsim.packet.switch import enqueue_hi
from wormsim.netsim.packet.wormhole.flowskip import fs_on_change
from wormsim.netsim.packet.wormhole.shadow import materialise, unpark_foreign
from wormsim.netsim.packet.wormhole.tunnel import defer_if_skipped, frozen_for, restamp, tunnel

__all__ = ["host_receive", "host_receive_deferred", "wh_on_finish"]


@njit(cache=True)
def _receive_data(S, P, p, now):
    q = S.pk_flow[p]
    S.rx_milestone[q] = P.ack_interval
    seq = S.pk_seq[p]
    exp = S.rx_expected[q]
    x = 0
    if seq == exp:
        exp += S.pk_payload[p]
        S.rx_expected[q] = exp
        if exp >= S.rx_milestone[q]:
            S.rx_milestone[q] += P.ack_interval
            x = 1
        elif exp % P.chunk == 0:
            x = 1
    elif seq > exp:
        if now >= S.rx_nack_t[q] or S.rx_last_nack[q] != exp:
            S.rx_nack_t[q] = now + P.nack_ps
            S.rx_last_nack[q] = exp
            x = 2
            S.cnt[C_NACKS] += 1
    if x == 0:
        pkt_free(S, p)
        return
    # reuse the data packet as its ACK (INT and timestamp carried over)
    S.pk_type[p] = PK_ACK if x == 1 else PK_NACK
    S.pk_seq[p] = S.rx_expected[q]
    S.pk_cnp[p] = S.pk_ecn[p]
    S.pk_ecn[p] = 0
    S.pk_size[p] = P.ack_bytes
    S.pk_payload[p] = 0
    S.pk_route[p] = S.qp_rack[q]
    S.pk_hop[p] = 0
    port = S.r_ports[S.qp_rack[q]]
    if frozen_for(S, P, port, q, now):  # this NIC sends a skipped partition's data
        tunnel(S, P, port, p, now)
        return
    if P.wh_ps > 0 and S.wh_pgrp[port] >= 0:
        unpark_foreign(S, P, port, q)
    enqueue_hi(S, port, p)
    nic_dequeue(S, P, port, now)


@njit(cache=True)
def _receive_ack(S, P, p, now):
    q = S.pk_flow[p]
    if S.qp_done[q]:
        pkt_free(S, p)
        return
    seq = S.pk_seq[p]
    if P.wh_data_only and seq < S.qp_una[q]:
        # a stale ACK (held in a frozen queue while later ones were tunnelled past it): in order
        # delivery never produces one, and its INT would be older than what the CC last saw
        pkt_free(S, p)
        return
    if seq > S.qp_una[q]:
        S.qp_una[q] = seq
        if P.wh_ps > 0:
            S.wh_tack[q] = now
    if S.qp_una[q] >= S.qp_size[q]:
        S.qp_done[q] = 1
        if P.wh_ps > 0:
            S.cnt[C_WH_DIRTY] = 1
            if P.wh_flow:  # its neighbours' flow skips end: their bottleneck changed
                fs_on_change(S, P, q, now)
            if S.wh_mhead[q] >= 0:  # followers mirror this flow: they finish with it
                wh_on_finish(S, P, q, now)
        cc_on_finish(S, P, q)
        finish_node(S, P, S.qp_node[q], now)
    if S.pk_type[p] == PK_NACK:
        S.qp_nxt[q] = S.qp_una[q]
    if not S.qp_done[q]:
        cc_on_ack(S, P, q, p, now)
    pkt_free(S, p)
    nic_dequeue(S, P, S.qp_nic[q], now)


@njit(cache=True)
def wh_on_finish(S, P, m, now):
    """Leader QP ``m`` just finished: every shadow QP mirroring it finishes now too, its
    remaining bytes credited (its packets still parked drain when its group is materialised,
    their ACKs dropped as for any finished flow); a group left without unfinished flows is
    materialised (:mod:`~wormsim.netsim.packet.wormhole.shadow`)."""
    q = S.wh_mhead[m]
    S.wh_mhead[m] = -1
    while q >= 0:
        nxt = S.wh_mnext[q]
        g = S.wh_qgrp[q]
        if S.wh_mapq[q] == m and g >= 0 and not S.qp_done[q] and S.wh_hold[q] != HOLD_WAITING:
            extra = S.qp_size[q] - S.qp_una[q]
            S.qp_size[q] -= extra
            S.qp_credit[q] += extra
            S.cnt[C_WH_BYTES] += extra
            S.cnt[C_WH_SHADOW_BYTES] += extra
            S.cnt[C_WH_MIRRORED] += 1
            S.qp_done[q] = 1
            S.wh_ghost[q] = 1
            S.cnt[C_WH_DIRTY] = 1
            cc_on_finish(S, P, q)
            S.wh_glive[g] -= 1
            finish_node(S, P, S.qp_node[q], now)  # may hold flows it releases onto the shadow
            if S.wh_glive[g] == 0:
                materialise(S, P, g, now)
                S.cnt[C_WH_EMPTIED] += 1
        q = nxt


@njit(cache=True)
def host_receive(S, P, p, now):
    """A data, ACK or NACK packet reached its destination host."""
    if is_ghost(S, P, p):
        pkt_free(S, p)
    elif S.pk_type[p] == PK_DATA:
        _receive_data(S, P, p, now)
    elif not (P.wh_data_only and defer_if_skipped(S, P, p, now)):
        _receive_ack(S, P, p, now)


@njit(cache=True)
def host_receive_deferred(S, P, p, now):
    """A control packet held for a skipped QP is due: timestamps moved by the hold; receive it."""
    restamp(S, p, (now - S.pk_at[p]) // 1000)
    _receive_ack(S, P, p, now)
