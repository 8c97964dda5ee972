"""The steady-state test of a flow's window of rate samples (Wormhole's detector, paper Eq. 6).

Used by partition skips (:mod:`~.wh`) and flow skips
(:mod:`~.flowskip`) alike.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.cc import cc_rate
from wormsim.netsim.packet.state import C_NOW
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = [
    "sample_rates",
    "ring_test",
    "trend",
    "window_stats",
    "newest_half_mean",
    "paused_in_window",
]


@njit(cache=True)
def sample_rates(S, P, q):
    """Add a sample to QP ``q``'s window: its delivered rate (bytes acked between the last ACKs
    of two sample periods over the exact time between those ACKs: no quantization to whole
    packets per period) and its congestion control's sending rate. Returns False when the
    sample only set the baseline of a new window (``wh_n < 0``)."""
    d = S.qp_una[q] - S.wh_last[q]
    el = S.wh_tack_ps[q] - S.wh_tlast_ps[q]
    S.wh_last[q] = S.qp_una[q]
    S.wh_tlast_ps[q] = S.wh_tack_ps[q]
    if S.wh_n[q] < 0:
        S.wh_n[q] = 0
        return False
    W = P.wh_window
    S.wh_ring_Bpps[q, S.wh_n[q] % W] = d / el if el > 0 else 0.0
    S.wh_cring_bps[q, S.wh_n[q] % W] = cc_rate(S, P, q)
    S.wh_n[q] += 1
    return True


@njit(cache=True)
def ring_test(ring, q, W, theta, n, blocks):
    """(steady, mean) of row ``q`` of a full sample ring whose next write index is ``n % W``.

    ``blocks`` <= 1: steady when (max - min) / mean < theta. Otherwise the window is cut into
    ``blocks`` consecutive blocks in time order (the newest ``blocks * (W // blocks)`` samples):
    steady when the block means are within theta of each other and (max - min) / mean < 2 theta,
    i.e. a bounded oscillation without a trend (see ``WormholeSpec.steadiness``)."""
    lo = ring[q, 0]
    hi = lo
    sm = 0.0
    for k in range(W):
        v = ring[q, k]
        sm += v
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    mean = sm / W
    if mean <= 0.0:
        return False, 0.0
    if blocks <= 1:
        return (hi - lo) / mean < theta, mean
    if (hi - lo) / mean >= 2.0 * theta:
        return False, mean
    bs = W // blocks
    first = n + W - blocks * bs  # oldest sample used, in time order
    blo = 1e300
    bhi = -1e300
    for b in range(blocks):
        bsum = 0.0
        for k in range(bs):
            bsum += ring[q, (first + b * bs + k) % W]
        bm = bsum / bs
        if bm < blo:
            blo = bm
        if bm > bhi:
            bhi = bm
    return (bhi - blo) / mean < theta, mean


@njit(cache=True)
def newest_half_mean(ring, q, W, n):
    """Mean of the newest ``W // 2`` samples of row ``q`` of a full ring whose next write index
    is ``n % W``: the rate a skip credits and a memo entry stores.

    The first window that passes the steadiness test still holds the end of the approach to the
    steady state (a flow starting at line rate comes down to its share), so its whole mean sits
    on the side the flow came from and a replayed step inherits the bias; the newest half is
    closer to where the rate settled, at twice the variance (docs/wormhole.md, "The credited
    rate")."""
    h = W // 2
    t = 0.0
    for k in range(W - h, W):
        t += ring[q, (n + k) % W]
    return t / h


@njit(cache=True)
def trend(ring, q, W, n):
    """|least-squares slope| x window span / mean of row ``q`` of a full ring (time order from
    the oldest sample, index ``n % W``): how far a straight-line trend moves over the window."""
    sy = 0.0
    sxy = 0.0
    for k in range(W):
        y = ring[q, (n + k) % W]
        sy += y
        sxy += k * y
    sx = W * (W - 1) / 2.0  # sums of k and k² over 0 .. W-1
    sxx = (W - 1) * W * (2 * W - 1) / 6.0
    den = W * sxx - sx * sx
    mean = sy / W
    if den <= 0.0 or mean <= 0.0:
        return 0.0
    slope = (W * sxy - sx * sy) / den
    return abs(slope) * (W - 1) / mean


@njit(cache=True)
def paused_in_window(S, P, q):
    """Whether a PFC pause reached a port of QP ``q``'s data route (its NIC's included) within
    its window: its rates then hold pauses the window saw, and a skip would carry them on
    across time in which no pause might come, or hold them off through pauses that will (a
    32-to-1 incast under DCTCP with a 2 MiB buffer, skipped so: 6.7 % mean FCT off packet
    mode, 24 % on one flow)."""
    since = S.cnt[C_NOW] - P.wh_window * P.wh_ps
    for j in range(S.r_off[2 * q], S.r_off[2 * q + 1]):
        if S.wh_pause_ps[S.r_ports[j]] >= since:
            return True
    return False


@njit(cache=True)
def window_stats(S, P, q):
    """(steady, mean delivered rate bytes/ps) of QP ``q``'s window: (max - min) / mean < theta
    on the detector's signal (delivered rate, or the congestion control's sending rate).

    A flow whose partition has not let it settle for ``P.wh_patience`` samples (the window
    filled ``patience_windows`` times over since it formed) is tested with the block means
    instead (:func:`ring_test` with 4 blocks): its congestion control oscillates wider than
    theta, and the window's mean is what has to be stable."""
    W = P.wh_window
    if S.wh_n[q] < W or paused_in_window(S, P, q):
        return False, 0.0
    n = S.wh_n[q]
    blocks = P.wh_blocks
    max_trend = P.wh_trend
    patient = blocks <= 1 and P.wh_patience > 0 and n >= P.wh_patience
    if patient:  # unsettled for patience windows: a bounded oscillation without a trend
        blocks = 4
        max_trend = P.wh_osc_trend
    steady, mean = ring_test(S.wh_ring_Bpps, q, W, P.wh_theta, n, blocks)
    if steady and patient and max_trend > 0.0 and trend(S.wh_ring_Bpps, q, W, n) >= max_trend:
        steady = False
    if P.wh_signal > 0 or P.wh_gap > 0.0:
        st_cc, cc_mean = ring_test(S.wh_cring_bps, q, W, P.wh_theta, n, blocks)
        if st_cc and max_trend > 0.0 and trend(S.wh_cring_bps, q, W, n) >= max_trend:
            st_cc = False
        if P.wh_signal == 1:
            steady = st_cc
        elif P.wh_signal == 2:
            steady = steady and st_cc
        if steady and P.wh_gap > 0.0 and P.win == 0:
            # a rate-based sender (no window) sending faster than it delivers is building a
            # queue: not a steady state (a windowed sender's rate variable can sit above what
            # its window lets through, so the test does not apply to it)
            # (the NIC serves its flows round robin: a flow cannot send above its share)
            nic = S.qp_nic[q]
            sending = min(cc_mean, S.p_rate_bps[nic] / max(S.nic_n[nic], 1))
            wire = mean * BPS_PER_BYTE_PER_PS * (P.mtu + P.hdr_bytes + P.int_bytes) / P.mtu
            steady = abs(sending - wire) < P.wh_gap * wire
    return steady, mean
