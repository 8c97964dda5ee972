"""The phantom data load of a skipped flow, port by port, in step with its real packets.

A skipped flow (:mod:`~.flowskip`) stops sending, but its data still loads
every port of its route as a fluid (``ph_data_bps``), so that its neighbours keep their share.
The load must not overlap the flow's own packets: those sent before the skip are still in
flight, and those sent after it take a while to reach the far hops. Put on and taken off at the
skip's start and end, the load doubled each hop's traffic for up to a round trip at the start
(its neighbours' HPCC cut their rates on the spike and, the skipped flow not reacting, took
hundreds of microseconds to climb back: a short flow sharing a bottleneck with a skipped one
finished 4-5 % late) and left a gap at the end. So the load goes on at each hop as the flow's
last packet before the skip leaves it, and off as its first packet after the skip reaches it
(:func:`fs_hop`, called for every data packet a flow-skip run transmits: :func:`data_hop`).

The port's INT byte counter counts the phantom bytes by time (:func:`settle`): the load is most
of a bottleneck's traffic and the port may idle between real packets.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.state import PK_DATA
from wormsim.netsim.packet.wormhole.fields import PHANTOM_ARMED, PHANTOM_OFF, PHANTOM_ON
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["count_by_time", "settle", "data_load", "fs_hop", "data_hop"]


@njit(cache=True)
def count_by_time(tx_bytes, bps, since, port, now):
    """Count the bytes of ``port``'s phantom load ``bps[port]`` (bit/s) from ``since[port]`` up
    to ``now`` into INT's byte counter ``tx_bytes`` (the fraction of a byte not yet counted is
    carried as time; without a load the clock follows ``now``). Shared by the phantom data of
    skipped flows (:func:`settle`) and the phantom ACKs of skipped and parked partitions
    (:func:`~.phantom.settle_ack`)."""
    t = since[port]
    if now <= t:
        return
    rate = bps[port]
    if rate > 0.0:
        b = int(rate * (now - t) / BPS_PER_BYTE_PER_PS)
        tx_bytes[port] += b
        since[port] = t + int(b * BPS_PER_BYTE_PER_PS / rate)
    else:
        since[port] = now


@njit(cache=True)
def settle(S, port, now):
    """Count ``port``'s phantom data bytes up to ``now`` in its INT byte counter."""
    count_by_time(S.tx_bytes, S.ph_data_bps, S.ph_data_ps, port, now)


@njit(cache=True)
def data_load(S, port, bps, now):
    """Add ``bps`` (negative: remove) to ``port``'s phantom data load from ``now``."""
    settle(S, port, now)
    v = S.ph_data_bps[port] + bps
    S.ph_data_bps[port] = v if v > 1.0 else 0.0
    S.ph_data_ps[port] = now


@njit(cache=True)
def fs_hop(S, P, p, now):
    """Data packet ``p`` starts crossing its current hop: record how far its flow's data got
    there, and switch its flow's phantom load on behind its last packet before a skip, or off
    ahead of its first packet after one."""
    q = S.pk_flow[p]
    j = S.pk_route[p] + S.pk_hop[p]
    end = S.pk_seq[p] + S.pk_payload[p]
    if end > S.fs_seen[j]:
        S.fs_seen[j] = end
    st = S.fs_pon[j]
    if st == PHANTOM_ARMED and end >= S.fs_last[q]:
        data_load(S, S.r_ports[j], S.fs_data_bps[q], now)
        S.fs_pon[j] = PHANTOM_ON
    elif st == PHANTOM_ON and S.fs_first[q] >= 0 and S.pk_seq[p] >= S.fs_first[q]:
        data_load(S, S.r_ports[j], -S.fs_data_bps[q], now)
        S.fs_pon[j] = PHANTOM_OFF


@njit(cache=True, inline="always")
def data_hop(S, P, p, now):
    """Packet ``p`` starts crossing its current hop in a flow-skip run: a data packet moves its
    flow's phantom data load (:func:`fs_hop`)."""
    if S.pk_type[p] == PK_DATA:
        fs_hop(S, P, p, now)
