"""Swift (Kumar et al., SIGCOMM 2020): a delay-targeting congestion window.

Every ACK carries the send time of the data packet it acknowledges (stamped when the sender's
NIC starts to transmit it), so the sender measures the packet's delay: serialisation,
propagation and queueing on the way out and back. Against a target delay it steers a window of
packets ``cwnd`` (fractional):

* target = ``s_base_ns`` + hops × ``s_hop_ns`` + fs(cwnd), where hops counts the switches on
  the flow's data route and the flow-scaling term fs = α/√cwnd + β, clamped to
  [0, ``s_fs_range_ns``], is ``s_fs_range_ns`` at ``s_fs_min`` packets and 0 at ``s_fs_max``
  (so many small windows sharing a link get more queueing room than a few large ones);
* delay < target: additive increase of ``s_ai`` packets per window of ACKed data
  (cwnd += ai × acked / cwnd, or ai × acked below one packet);
* delay ≥ target: multiplicative decrease by max(1 − β (delay − target) / delay, 1 − max_mdf),
  at most once per smoothed RTT; a NACK (loss) cuts by ``max_mdf``, also once per RTT;
* cwnd stays within [``s_min_cwnd``, ``s_max_cwnd``] packets.

The window is sent at line rate, with no pacing: a packet leaves when a whole packet fits in
the window (in flight + one packet ≤ cwnd). Below one packet, the sender paces instead: one
packet every srtt / cwnd, and no window. The smoothed RTT is TCP's (gain 1/8, first sample
taken as is).

Swift also keeps a second, endpoint window against host delay; wormsim's hosts add no delay,
so only the fabric window is modelled.
"""

from __future__ import annotations

import math

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.nic import change_rate
from wormsim.netsim.packet.state import PK_NACK
from wormsim.units import BPS_PER_BYTE_PER_PS, PS_PER_NS, PS_PER_NS_F, S_PER_NS

__all__ = [
    "swift_on_start",
    "swift_on_ack",
    "swift_on_finish",
    "swift_on_timer",
    "swift_shift",
    "swift_resume",
    "swift_rate",
    "swift_adopt",
    "swift_copy",
    "swift_save",
    "swift_restore",
    "swift_target_ns",
]

_GAIN = 0.125  # the smoothed RTT's EWMA gain (TCP's, as htsim's Swift)


@njit(cache=True)
def swift_target_ns(S, P, q, cwnd):
    """Target delay (ns) of QP ``q`` at a window of ``cwnd`` packets: its path's base target
    plus the flow-scaling term."""
    alpha = P.s_fs_range_ns / (1.0 / math.sqrt(P.s_fs_min) - 1.0 / math.sqrt(P.s_fs_max))
    beta = -alpha / math.sqrt(P.s_fs_max)
    fs = alpha / math.sqrt(cwnd) + beta if cwnd > 0 else P.s_fs_range_ns
    fs = min(max(fs, 0.0), P.s_fs_range_ns)
    return S.s_tgt_ns[q] + fs


@njit(cache=True)
def _rtt_ns(S, P, q):
    """QP ``q``'s smoothed RTT, or the base RTT before its first sample."""
    return S.s_srtt_ns[q] if S.s_srtt_ns[q] > 0 else float(P.base_rtt_ns)


@njit(cache=True)
def swift_rate(S, P, q):
    """The rate (bit/s) QP ``q``'s window sends at: cwnd packets per smoothed RTT."""
    size = P.mtu + P.hdr_bytes + P.int_bytes
    return min(S.s_cwnd[q] * size * 8.0 / (_rtt_ns(S, P, q) * S_PER_NS), S.qp_max_bps[q])


@njit(cache=True)
def _window_and_rate(S, P, q):
    """The window (bytes, 0 = none) and sending rate (bit/s) QP ``q``'s cwnd says: a window of
    whole packets at line rate, or below one packet no window and one packet every srtt / cwnd."""
    cwnd = S.s_cwnd[q]
    if cwnd >= 1.0:
        return int(cwnd * P.mtu) - P.mtu + 1, S.qp_max_bps[q]  # in flight + one packet <= cwnd
    return 0, swift_rate(S, P, q)


@njit(cache=True)
def _apply(S, P, q, now):
    """Put QP ``q``'s window and pacing where its cwnd says (:func:`_window_and_rate`)."""
    win, rate = _window_and_rate(S, P, q)
    S.qp_win[q] = win
    if rate != S.qp_rate_bps[q]:
        change_rate(S, P, q, rate, now)


@njit(cache=True)
def _clamp(P, cwnd):
    return min(max(cwnd, P.s_min_cwnd), P.s_max_cwnd)


@njit(cache=True)
def swift_on_start(S, P, q, rate):
    """QP ``q`` starts: its initial window, its path's base target (``s_base_ns`` plus
    ``s_hop_ns`` per switch of its data route), no RTT sample yet."""
    hops = S.r_off[2 * q + 1] - S.r_off[2 * q] - 1
    S.s_tgt_ns[q] = P.s_base_ns + hops * P.s_hop_ns
    S.s_cwnd[q] = _clamp(P, P.s_init_cwnd)
    S.s_srtt_ns[q] = 0.0
    S.s_t_dec_ps[q] = -1
    S.s_una[q] = S.qp_una[q]
    win, pace = _window_and_rate(S, P, q)  # ``rate`` (line rate) unless below one packet
    S.qp_win[q] = win
    S.qp_rate_bps[q] = pace  # nothing sent yet: no pacing time to shift


@njit(cache=True)
def swift_on_ack(S, P, q, p, now):
    """ACK (or NACK) ``p`` of QP ``q``: a delay sample; increase or decrease the window."""
    delay = float(now // PS_PER_NS - S.pk_ts_ns[p])
    srtt = S.s_srtt_ns[q]
    can_decrease = S.s_t_dec_ps[q] < 0 or now - S.s_t_dec_ps[q] >= srtt * PS_PER_NS_F
    S.s_srtt_ns[q] = delay if srtt == 0.0 else srtt + _GAIN * (delay - srtt)
    acked = (S.qp_una[q] - S.s_una[q]) / P.mtu  # packets newly acknowledged
    S.s_una[q] = S.qp_una[q]
    cwnd = S.s_cwnd[q]
    new = cwnd
    target = swift_target_ns(S, P, q, cwnd)
    if S.pk_type[p] == PK_NACK:
        if can_decrease:
            new = cwnd * (1.0 - P.s_max_mdf)
    elif delay < target:
        if acked > 0:
            new = cwnd + (P.s_ai * acked / cwnd if cwnd >= 1.0 else P.s_ai * acked)
    elif can_decrease and delay > 0:
        new = cwnd * max(1.0 - P.s_beta * (delay - target) / delay, 1.0 - P.s_max_mdf)
    new = _clamp(P, new)
    if new < cwnd:
        S.s_t_dec_ps[q] = now
    S.s_cwnd[q] = new
    _apply(S, P, q, now)


@njit(cache=True)
def swift_adopt(S, P, q, rate, now):
    """Put QP ``q`` at ``rate`` (bit/s): the window that carries it over its smoothed RTT."""
    change_rate(S, P, q, rate, now)
    size = P.mtu + P.hdr_bytes + P.int_bytes
    S.s_cwnd[q] = _clamp(P, rate * _rtt_ns(S, P, q) * PS_PER_NS_F / (BPS_PER_BYTE_PER_PS * size))
    _apply(S, P, q, now)


@njit(cache=True)
def swift_copy(S, P, src, q, now):
    """Give QP ``q`` the window and smoothed RTT of QP ``src``."""
    S.s_cwnd[q] = S.s_cwnd[src]
    S.s_srtt_ns[q] = S.s_srtt_ns[src]
    _apply(S, P, q, now)


@njit(cache=True)
def swift_save(S, P, q, out):
    """Write QP ``q``'s window (packets) and smoothed RTT (ns) into ``out``."""
    out[0] = S.s_cwnd[q]
    out[1] = S.s_srtt_ns[q]


@njit(cache=True)
def swift_restore(S, P, q, rate, state, now):
    """Put QP ``q`` at ``rate`` (:func:`swift_adopt`) and put back what :func:`swift_save`
    wrote."""
    swift_adopt(S, P, q, rate, now)
    S.s_cwnd[q] = _clamp(P, state[0])
    S.s_srtt_ns[q] = state[1]
    _apply(S, P, q, now)


@njit(cache=True, inline="always")
def swift_on_finish(S, P, q):
    """No timers to stop."""


@njit(cache=True, inline="always")
def swift_on_timer(S, P, sub, arg, now):
    """No timers."""


@njit(cache=True, inline="always")
def swift_resume(S, P, q):
    """Its smoothed RTT carries on."""


@njit(cache=True)
def swift_shift(S, P, q, dns):
    """QP ``q`` was moved ``dns`` ns through time: so is its last decrease."""
    if S.s_t_dec_ps[q] >= 0:
        S.s_t_dec_ps[q] += dns * PS_PER_NS
