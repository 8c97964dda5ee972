"""Shared kernel helpers: event scheduling, packet pool, link transmission, RNG, tx times."""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.heap import heap_push, heap_push_seq
from wormsim.netsim.packet.state import (
    C_CURSEQ,
    C_FREE,
    C_HOPS,
    C_INUSE,
    C_PEAK_PKTS,
    C_RNG,
    C_SEQ,
    CC_SUB_BITS,
    EV_ARRIVE,
    EV_CC,
    EV_TXDONE,
    PK_DATA,
)
from wormsim.netsim.packet.wormhole import hooks
from wormsim.units import BPS_PER_BYTE_PER_PS, BPS_PER_BYTE_PER_PS_INT, NS_PER_S, PS_PER_NS

__all__ = [
    "push",
    "push_seq",
    "push_cc_timer",
    "sw_kick",
    "port_free",
    "pkt_alloc",
    "pkt_free",
    "transmit",
    "link_pop",
    "rand01",
    "tx_ps_port",
    "tx_ps_rate",
]


@njit(cache=True, inline="always")
def push(S, t, etype, arg, owner):
    """Schedule an event. The values are typed int64 here, so the heap's functions compile
    once, whatever literal or integer type a call site holds them in."""
    heap_push(
        S.cnt, S.ht_ps, S.hs, S.he, S.ho, np.int64(t), np.int64(etype), np.int64(arg),
        np.int64(owner),
    )  # fmt: skip


@njit(cache=True, inline="always")
def push_cc_timer(S, t, sub, arg, owner):
    """Schedule a timer of the congestion control: an ``EV_CC`` event whose arg is its own
    sub-code ``sub`` (< ``2**CC_SUB_BITS``) below its ``arg``; the loop hands both back to
    ``cc.cc_on_timer``."""
    push(S, t, EV_CC, sub | (arg << CC_SUB_BITS), owner)


@njit(cache=True, inline="always")
def push_seq(S, t, seq, etype, arg, owner):
    """Schedule an event with a sequence number drawn earlier (its place among same-time
    events)."""
    heap_push_seq(S.cnt, S.ht_ps, S.hs, S.he, S.ho, t, seq, etype | (arg << 8), owner)


@njit(cache=True, inline="always")
def pkt_alloc(S):
    """Take a packet from the free list (the caller guarantees one is free)."""
    top = S.cnt[C_FREE] - 1
    S.cnt[C_FREE] = top
    p = S.free_stack[top]
    S.cnt[C_INUSE] += 1
    if S.cnt[C_INUSE] > S.cnt[C_PEAK_PKTS]:
        S.cnt[C_PEAK_PKTS] = S.cnt[C_INUSE]
    S.pk_next[p] = -1
    S.pk_nhop[p] = 0
    S.pk_ecn[p] = 0
    S.pk_cnp[p] = 0
    return p


@njit(cache=True, inline="always")
def pkt_free(S, p):
    """Return a packet to the free list."""
    S.free_stack[S.cnt[C_FREE]] = p
    S.cnt[C_FREE] += 1
    S.cnt[C_INUSE] -= 1


@njit(cache=True, inline="always")
def ns3_seconds_ns(t):
    """``Time Seconds (double t)`` of ns-3.17 (128-bit ``int64x64_t``, ns resolution) in ns:
    the fraction is cut to 64 binary digits, times 10^9, floored. That floors the double's exact
    binary value, not its decimal: at 1 Gb/s a 1,048 B frame is ``8.384e-06`` s, whose double is
    just below, so ns-3 paces it 8,383 ns apart (``int(t * 1e9)`` rounds to 8,384)."""
    whole = int(t)
    a = (t - whole) * 4294967296.0  # the fraction's first 32 bits, exactly
    a_hi = int(a)
    a_lo = int((a - a_hi) * 4294967296.0)  # its next 32 bits
    return whole * NS_PER_S + ((a_hi * NS_PER_S + ((a_lo * NS_PER_S) >> 32)) >> 32)


@njit(cache=True, inline="always")
def tx_ps_port(P, size, rate):
    """Serialization time (ps) of ``size`` bytes at integer ``rate`` bit/s (ns-3:
    ``Seconds (DataRate::CalculateTxTime)``, see :func:`ns3_seconds_ns`)."""
    if P.trunc_tx:
        return ns3_seconds_ns(size * 8.0 / rate) * PS_PER_NS
    return size * BPS_PER_BYTE_PER_PS_INT // rate


@njit(cache=True, inline="always")
def tx_ps_rate(P, size, rate):
    """Pacing time (ps) of ``size`` bytes at float ``rate`` bit/s (ns-3: as
    :func:`tx_ps_port`)."""
    if P.trunc_tx:
        return ns3_seconds_ns(size * 8.0 / rate) * PS_PER_NS
    return int(size * BPS_PER_BYTE_PER_PS / rate)


@njit(cache=True, inline="always")
def port_free(S, port, now):
    """Whether switch ``port``'s wire is free for the event being handled. As in ns-3, a port
    is busy until its transmit-complete event has run: at ``now == p_free_ps`` that is decided by
    the sequence numbers (the transmit-complete's was drawn when the packet started, as ns-3's
    ``QbbNetDevice::TransmitStart`` schedules it), so packets arriving in the same ns but
    scheduled earlier are queued first and the port then sends from the fuller queue."""
    f = S.p_free_ps[port]
    return f < now or (f == now and S.cnt[C_CURSEQ] >= S.p_free_seq[port])


@njit(cache=True, inline="always")
def sw_kick(S, port, now):
    """After an enqueue on a busy switch port: make sure a tx-done is pending (returns 1 if the
    port is free, i.e. the caller should dequeue now)."""
    if port_free(S, port, now):
        return 1
    if S.p_pend[port] == 0:
        S.p_pend[port] = 1
        push_seq(S, S.p_free_ps[port], S.p_free_seq[port], EV_TXDONE, port, port)
    return 0


@njit(cache=True, inline="always")
def transmit(S, P, port, p, now):
    """Start serializing packet ``p`` on ``port`` (:func:`_transmit`, given int64 indices so it
    compiles once whatever integer type a caller holds them in)."""
    _transmit(S, P, np.int64(port), np.int64(p), np.int64(now))


@njit(cache=True)
def _transmit(S, P, port, p, now):
    """Start serializing packet ``p`` on ``port``: schedules the arrival and, if needed, tx-done.

    A NIC port always gets its tx-done (the NIC decides at completion what to send). A switch
    port is busy until ``p_free_ps``; its tx-done is scheduled only while packets wait behind the
    one on the wire (here, or by :func:`sw_kick` on enqueue), so an idle hop costs one event.

    Arrivals on a link are FIFO in ``(time, seq)``, so only the link's first packet in flight is
    in the heap; the others wait in the link's list (``lk_head``/``lk_tail`` through ``pk_next``)
    with their time and sequence number (``pk_at_ps``/``pk_as``), drawn now exactly as if pushed,
    and :func:`link_pop` pushes the next one when the first arrives. Same event order, smaller heap.
    """
    tx = tx_ps_port(P, S.pk_size[p], S.p_rate_bps[port])
    hooks.data_hop(S, P, p, now)
    tx = hooks.transmit_time(S, P, port, tx, now)
    if S.p_sw[port]:
        # the transmit-complete's sequence number is drawn now, pushed or not (see port_free)
        fs = S.cnt[C_SEQ]
        S.cnt[C_SEQ] = fs + 1
        S.p_free_ps[port] = now + tx
        S.p_free_seq[port] = fs
        if S.p_pend[port] == 0 and (S.qh_head[port] >= 0 or S.ql_head[port] >= 0):
            S.p_pend[port] = 1
            push_seq(S, now + tx, fs, EV_TXDONE, port, port)
    else:
        S.p_busy[port] = 1
        push(S, now + tx, EV_TXDONE, port, port)
    t = now + tx + S.p_delay_ps[port]
    seq = S.cnt[C_SEQ]
    S.cnt[C_SEQ] = seq + 1
    S.pk_next[p] = -1
    tail = S.lk_tail[port]
    S.lk_tail[port] = p
    if tail < 0:
        S.lk_head[port] = p
        heap_push_seq(S.cnt, S.ht_ps, S.hs, S.he, S.ho, t, seq, EV_ARRIVE | (p << 8), port)
    else:
        S.pk_next[tail] = p
        S.pk_at_ps[p] = t
        S.pk_as[p] = seq
    if S.pk_type[p] == PK_DATA:
        S.cnt[C_HOPS] += 1


@njit(cache=True, inline="always")
def link_pop(S, port, p):
    """Packet ``p`` (the first in flight on the link out of ``port``) arrived and its event was
    popped: put the link's next packet, if any, in the heap."""
    nx = S.pk_next[p]
    S.lk_head[port] = nx
    if nx < 0:
        S.lk_tail[port] = -1
    else:
        heap_push_seq(
            S.cnt,
            S.ht_ps,
            S.hs,
            S.he,
            S.ho,
            S.pk_at_ps[nx],
            S.pk_as[nx],
            EV_ARRIVE | (nx << 8),
            port,
        )


@njit(cache=True, inline="always")
def rand01(S):
    """Uniform [0, 1) from the in-state xorshift64* generator (deterministic per run)."""
    x = S.cnt[C_RNG]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    S.cnt[C_RNG] = x
    r = (x * 2685821657736338717) >> 11
    return (r & ((1 << 53) - 1)) / 9007199254740992.0
