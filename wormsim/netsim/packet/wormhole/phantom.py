"""Phantom loads on a port: the transmit-time stretch and the INT byte counter.

A skipped partition's flows (:mod:`.tunnel`) and a skipped flow (:mod:`.flowskip`) send no
packets, but their ACKs (``ph_rate_bps``) and a skipped flow's data (``ph_data_bps``,
:mod:`.flowphantom`) still load the ports they would cross: a real packet on such a port takes its
serialization time stretched by the load (:func:`phantom_tx`), and the port's INT byte counter
counts the phantom bytes (:func:`settle_ack`, :func:`settle_int`), so HPCC sees the utilisation
the skipped flows would cause.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.core import tx_ps_port
from wormsim.netsim.packet.state import C_NOW
from wormsim.netsim.packet.wormhole.flowphantom import count_by_time, settle
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["phantom_tx", "settle_ack", "ack_load", "settle_int"]


@njit(cache=True, inline="always")
def phantom_tx(S, P, port, tx, now):
    """Serialization time ``tx`` on ``port`` stretched by the phantom loads of skipped
    partitions and flows (:mod:`.tunnel`, :mod:`.flowskip`); the port's INT byte counter counts
    them.

    The ACK load ``ph_rate_bps`` is in bytes on the wire (what INT counts), but a real ACK holds
    the port for its serialization time as :func:`~wormsim.netsim.packet.core.tx_ps_port` gives
    it, whole nanoseconds like HPCC ns-3 (60 bytes at 100 Gbit/s: 4 ns, not 4.8): the stretch
    uses that share of the link, or the ACKs of parked shadows slowed a DCTCP ring's leader by
    0.8 % (docs/wormhole.md). With partition skips both loads' bytes are counted by time, where
    INT reads the counter (:func:`settle_ack`, :func:`~.flowphantom.settle`): the port may idle
    between real packets. Flow skips count the ACK bytes per stretched transmission, as they were
    validated: counted by time, one HPCC flow group of the k=4 fat-tree permutation ended 17.7 %
    off ns-3 (bound 15 %)."""
    ph = S.ph_rate_bps[port]
    pd = S.ph_data_bps[port] if P.wh_flow else 0.0
    if ph <= 0.0 and pd <= 0.0:
        return tx
    rate = S.p_rate_bps[port]
    busy = 0.0
    if ph > 0.0:
        busy = ph * tx_ps_port(P, P.ack_bytes, rate) / (P.ack_bytes * BPS_PER_BYTE_PER_PS / rate)
        if busy > 0.5 * rate:
            busy = 0.5 * rate
    if pd > 0.0:
        frame = P.mtu + P.hdr_bytes + P.int_bytes
        busy += pd * tx_ps_port(P, frame, rate) / (frame * BPS_PER_BYTE_PER_PS / rate)
        if busy > 0.98 * rate:
            busy = 0.98 * rate
        settle(S, port, now)
    stretched = int(tx * rate / (rate - busy))
    if ph > 0.0 and not P.wh_data_only:  # flow skips: per stretched transmission (see above)
        S.tx_bytes[port] += int(ph * stretched / BPS_PER_BYTE_PER_PS)
    return stretched


@njit(cache=True)
def settle_ack(S, port, now):
    """Count ``port``'s phantom ACK bytes up to ``now`` in its INT byte counter (the fraction of
    a byte not yet counted is carried as time).

    By time, not per transmission: real ACKs cross the port while it idles between data packets
    too, and HPCC reads the counter as the port's transmit rate. Counted only while the port
    transmitted, a bottleneck 93 % busy hid 7 % of its ACK bytes from the flows' utilisation and
    a GPT-13B/128 data-parallel ring behind parked shadows ran 0.5 % fast."""
    count_by_time(S.tx_bytes, S.ph_rate_bps, S.ph_ack_ps, port, now)


@njit(cache=True)
def ack_load(S, port, old_bps, new_bps):
    """Replace a flow's ``old_bps`` of ``port``'s phantom ACK load by ``new_bps`` from now (the
    bytes so far counted at the old load first)."""
    now = S.cnt[C_NOW]
    settle_ack(S, port, now)
    v = S.ph_rate_bps[port] - old_bps + new_bps
    S.ph_rate_bps[port] = v if v > 1.0 else 0.0
    if S.ph_ack_ps[port] < now:
        S.ph_ack_ps[port] = now


@njit(cache=True, inline="always")
def settle_int(S, P, port, now):
    """``port`` is about to stamp INT on a data packet: count its phantom loads' bytes up to
    ``now`` in its byte counter (skipped flows' data; skipped and parked flows' ACKs)."""
    if P.wh_flow:
        settle(S, port, now)  # skipped flows' phantom bytes up to now
    if P.wh_data_only:  # skipped and parked flows' ACK bytes up to now
        if S.ph_rate_bps[port] > 0.0:
            settle_ack(S, port, now)
        elif S.ph_ack_ps[port] < now:  # no load: the clock only follows, no call
            S.ph_ack_ps[port] = now
