"""Swift's reaction to one ACK (``cc_swift.swift_on_ack``) against Kumar et al., SIGCOMM 2020
(Algorithm 1), with the defaults of htsim's Swift: base target 20 µs, hop scaling 20/6.55 µs
per hop, flow scaling range 100 µs between windows of 0.1 and 100 packets, ai 1 packet,
beta 0.8, max_mdf 0.5, initial window 15 packets.

* target = base + hops × h + fs, fs = α/√cwnd + β clamped to [0, range],
  α = range / (1/√fs_min − 1/√fs_max), β = −α/√fs_max;
* delay < target: cwnd += ai × acked / cwnd (cwnd ≥ 1), or ai × acked below one packet;
* delay ≥ target and no decrease in the last smoothed RTT:
  cwnd × max(1 − beta (delay − target) / delay, 1 − max_mdf);
* below one packet: no window, one packet every srtt / cwnd.
"""

from __future__ import annotations

import math

import pytest
from numba import njit

from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.cc_swift import swift_on_ack, swift_on_start, swift_target_ns
from wormsim.netsim.packet.state import PK_ACK, PK_NACK

from ._kit import NS, Kit, alloc, kit

LINE = 100e9
Q = 0
MTU, WIRE = 1000, 1048
BASE, H, RANGE, FS_MIN, FS_MAX = 20_000.0, 20_000 / 6.55, 100_000.0, 0.1, 100.0
AI, BETA, MAX_MDF, INIT = 1.0, 0.8, 0.5, 15.0


@njit
def _on_ack(S_, P_, q, p, now):
    swift_on_ack(S_, st.raw_params(P_), q, p, now)


@njit
def _on_start(S_, P_, q, rate):
    swift_on_start(S_, st.raw_params(P_), q, rate)


@njit
def _target(S_, P_, q, cwnd):
    return swift_target_ns(S_, st.raw_params(P_), q, cwnd)


def _state(**net) -> Kit:
    """One flow 0 -> 1 on a star: a data route of two links, one switch."""
    k = kit("swift", **net)
    k.start(Q)
    _on_start(k.S, k.P, Q, LINE)
    return k


def _fs(cwnd: float) -> float:
    alpha = RANGE / (1 / math.sqrt(FS_MIN) - 1 / math.sqrt(FS_MAX))
    return min(max(alpha / math.sqrt(cwnd) - alpha / math.sqrt(FS_MAX), 0.0), RANGE)


def _ack(k: Kit, delay_ns: int, acked: int = MTU, now_ns: int = 10_000_000, kind=PK_ACK):
    """An ACK of ``acked`` new bytes whose data packet left ``delay_ns`` before now."""
    A = k.A
    A["qp_una"][Q] += acked
    p = alloc(k, type=kind, flow=Q, seq=int(A["qp_una"][Q]), ts_ns=now_ns - delay_ns)
    _on_ack(k.S, k.P, Q, p, now_ns * NS + 999)


def test_the_defaults_are_htsims():
    P = _state().P
    assert (P.s_base_ns, P.s_hop_ns, P.s_fs_range_ns) == pytest.approx((BASE, H, RANGE))
    assert (P.s_fs_min, P.s_fs_max, P.s_ai, P.s_beta, P.s_max_mdf) == (
        FS_MIN,
        FS_MAX,
        AI,
        BETA,
        MAX_MDF,
    )
    assert P.s_init_cwnd == INIT and P.int_bytes == 0 and P.mtu + P.hdr_bytes == WIRE


def test_a_flow_starts_with_its_initial_window_of_whole_packets_at_line_rate():
    k = _state()
    A = k.A
    assert A["s_cwnd"][Q] == INIT and A["qp_rate_bps"][Q] == LINE
    # a packet leaves while in flight + one packet <= cwnd: 15 packets, not 16
    assert A["qp_win"][Q] == 14 * MTU + 1
    assert A["s_tgt_ns"][Q] == pytest.approx(BASE + 1 * H)  # one switch on its path


def test_the_target_scales_with_hops_and_falls_with_the_window():
    k = _state()
    for cwnd in (0.1, 1.0, 15.0, 50.0, 100.0, 400.0):
        assert _target(k.S, k.P, Q, cwnd) == pytest.approx(BASE + H + _fs(cwnd))
    assert _fs(0.1) == pytest.approx(RANGE) and _fs(100.0) == pytest.approx(0.0)
    assert _fs(400.0) == 0.0  # clamped
    assert BASE + _fs(15.0) == pytest.approx(25_170, abs=10)  # htsim's 25.17 µs at 15 packets


def test_below_the_target_the_window_grows_by_ai_per_window_of_acks():
    k = _state()
    _ack(k, 10_000)
    assert k.A["s_cwnd"][Q] == pytest.approx(INIT + AI * 1 / INIT)
    _ack(k, 10_000, acked=3 * MTU)
    c = INIT + AI / INIT
    assert k.A["s_cwnd"][Q] == pytest.approx(c + AI * 3 / c)


def test_above_the_target_the_window_shrinks_in_proportion_to_the_excess_once_per_rtt():
    k = _state()
    target = BASE + H + _fs(INIT)
    delay = int(target + 5_000)
    _ack(k, delay, now_ns=10_000_000)
    cut = INIT * max(1 - BETA * (delay - target) / delay, 1 - MAX_MDF)
    assert k.A["s_cwnd"][Q] == pytest.approx(cut, rel=1e-9)
    # within one smoothed RTT of that decrease: no second one
    _ack(k, delay, now_ns=10_000_000 + delay // 2)
    assert k.A["s_cwnd"][Q] == pytest.approx(cut, rel=1e-9)
    # a smoothed RTT later: the next one
    _ack(k, delay, now_ns=10_000_000 + 2 * delay)
    t2 = BASE + H + _fs(cut)
    assert k.A["s_cwnd"][Q] == pytest.approx(cut * max(1 - BETA * (delay - t2) / delay, 0.5))


def test_a_large_excess_is_cut_by_max_mdf_and_a_nack_by_max_mdf():
    k = _state()
    _ack(k, 10_000_000)  # 10 ms against a 25 µs target
    assert k.A["s_cwnd"][Q] == pytest.approx(INIT * (1 - MAX_MDF))
    k = _state()
    _ack(k, 1_000, acked=0, kind=PK_NACK)
    assert k.A["s_cwnd"][Q] == pytest.approx(INIT * (1 - MAX_MDF))


def test_below_one_packet_it_paces_one_packet_per_srtt_over_cwnd_and_drops_its_window():
    k = _state(swift_init_cwnd=0.5)
    A = k.A
    assert A["qp_win"][Q] == 0
    _ack(k, 12_000, acked=0)  # no new data: no increase; sets srtt = 12 µs
    assert A["s_srtt_ns"][Q] == 12_000.0 and A["s_cwnd"][Q] == 0.5
    gap_ps = WIRE * 8 / A["qp_rate_bps"][Q] * 1e12
    assert gap_ps == pytest.approx(12_000 / 0.5 * 1e3)  # srtt / cwnd
    _ack(k, 12_000, acked=MTU)  # below one packet: + ai x acked
    assert A["s_cwnd"][Q] == pytest.approx(1.5) and A["qp_rate_bps"][Q] == LINE
    assert A["qp_win"][Q] == int(1.5 * MTU) - MTU + 1


def test_the_window_stays_within_its_bounds():
    k = _state(swift_min_cwnd=2.0)
    for i in range(5):  # a decrease per smoothed RTT (10 ms)
        _ack(k, 10_000_000, now_ns=10_000_000 + i * 20_000_000)
    assert k.A["s_cwnd"][Q] == 2.0
    k = _state(swift_max_cwnd=15.5)
    for _ in range(20):
        _ack(k, 1_000)
    assert k.A["s_cwnd"][Q] == 15.5


def test_the_smoothed_rtt_is_tcps():
    k = _state()
    _ack(k, 10_000)
    assert k.A["s_srtt_ns"][Q] == 10_000.0
    _ack(k, 18_000)
    assert k.A["s_srtt_ns"][Q] == pytest.approx(10_000 + (18_000 - 10_000) / 8)
