"""The congestion-control seam (:mod:`wormsim.netsim.packet.cc`): each hook reaches exactly the
state of the congestion control in ``P.cc``, and Wormhole's save, restore, copy and shift keep it
whole."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from tests.netsim.packet._kit import Kit, kit
from wormsim.netsim.cc_registry import CC_NAMES
from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.cc import (
    cc_on_start,
    cc_rate,
    cc_shift,
    copy_cc,
    restore_cc,
    save_cc,
)
from wormsim.netsim.packet.wormhole.fields import CC_STATE
from wormsim.netsim.wormhole.spec import WormholeSpec

#: each congestion control's state rows that a memo entry and a shadow carry (the sending rate
#: ``qp_rate_bps`` besides)
ROWS = {
    "dcqcn": ("m_alpha", "m_target_bps", "m_stage"),
    "hpcc": ("h_u", "h_inc"),
    "timely": ("t_inc", "t_rtt_diff_ns", "t_last_rtt_ns"),
    "dctcp": ("d_alpha",),
    "swift": ("s_cwnd", "s_srtt_ns"),
}
#: rows of other congestion controls a hook of ``cc`` must leave alone
OTHERS = ("m_alpha", "m_target_bps", "m_stage", "h_u", "h_inc", "h_cur_bps", "t_inc",
          "t_rtt_diff_ns", "t_last_rtt_ns", "t_cur_bps", "d_alpha", "s_cwnd",
          "s_srtt_ns")  # fmt: skip


def _kit(cc: str) -> Kit:
    """Two 1 MB flows 0 -> 2 and 1 -> 2 on a 3-host star, with Wormhole's arrays."""
    k = kit(cc, pairs=[(0, 2), (1, 2)], n_hosts=3, wormhole=WormholeSpec())
    k.start(0)
    k.start(1)
    return k


@njit
def _save(S_, P_, q, out):
    save_cc(S_, st.raw_params(P_), q, out)


@njit
def _restore(S_, P_, q, state, now):
    restore_cc(S_, st.raw_params(P_), q, state, now)


@njit
def _copy(S_, P_, src, q, now):
    copy_cc(S_, st.raw_params(P_), src, q, now)


@njit
def _start(S_, P_, q, rate):
    cc_on_start(S_, st.raw_params(P_), q, rate)


@njit
def _rate(S_, P_, q):
    return cc_rate(S_, st.raw_params(P_), q)


@njit
def _shift(S_, P_, q, dns):
    cc_shift(S_, st.raw_params(P_), q, dns)


def _set_state(k: Kit, q: int) -> None:
    """Give QP ``q`` a state of each congestion control no default would produce."""
    A = k.A
    A["qp_rate_bps"][q] = 37e9
    A["m_alpha"][q], A["m_target_bps"][q], A["m_stage"][q], A["m_first"][q] = 0.3, 61e9, 2, 0
    A["h_u"][q], A["h_inc"][q], A["h_cur_bps"][q] = 0.87, 3, 41e9
    A["t_inc"][q], A["t_rtt_diff_ns"][q], A["t_last_rtt_ns"][q], A["t_cur_bps"][q] = (
        4,
        -120.5,
        9_100,
        39e9,
    )
    A["d_alpha"][q] = 0.11
    A["s_cwnd"][q], A["s_srtt_ns"][q] = 23.5, 14_200.0


def _snapshot(k: Kit, q: int) -> dict[str, float]:
    return {f: float(k.A[f][q]) for f in OTHERS}


@pytest.mark.parametrize("cc", CC_NAMES)
def test_a_saved_state_restored_on_another_qp_is_the_same_state(cc):
    k = _kit(cc)
    _set_state(k, 0)
    rate = _rate(k.S, k.P, 0)  # 37 Gbit/s, or Swift's window per RTT
    k.A["wh_cring_bps"][0, :] = rate  # the window's sending-rate samples
    out = np.zeros(CC_STATE)
    _save(k.S, k.P, 0, out)
    assert out[0] == pytest.approx(rate, rel=1e-12)
    _restore(k.S, k.P, 1, out, 0)
    assert _rate(k.S, k.P, 1) == pytest.approx(rate, rel=1e-12)
    for f in ROWS[cc]:
        assert k.A[f][1] == k.A[f][0], f


@pytest.mark.parametrize("cc", CC_NAMES)
def test_copy_gives_exactly_the_state_of_its_own_congestion_control(cc):
    k = _kit(cc)
    _set_state(k, 0)
    before = _snapshot(k, 1)
    _copy(k.S, k.P, 0, 1, 0)
    assert _rate(k.S, k.P, 1) == _rate(k.S, k.P, 0)
    rate_rows = {"hpcc": {"h_cur_bps"}, "timely": {"t_cur_bps"}}.get(cc, set())
    copied = set(ROWS[cc]) | rate_rows  # with the reference rate its congestion control keeps
    for f in OTHERS:
        want = k.A[f][0] if f in copied else before[f]
        assert k.A[f][1] == want, f


@pytest.mark.parametrize("cc", CC_NAMES)
def test_a_start_sets_the_rate_variable_of_its_congestion_control_only(cc):
    k = _kit(cc)
    _set_state(k, 1)
    before = _snapshot(k, 1)
    _start(k.S, k.P, 1, 100e9)
    own = {
        "dcqcn": {"m_target_bps": 100e9},
        "hpcc": {"h_cur_bps": 100e9},
        "timely": {"t_cur_bps": 100e9},
        "swift": {"s_cwnd": k.P.s_init_cwnd, "s_srtt_ns": 0.0},
    }.get(cc, {})
    for f in OTHERS:
        assert k.A[f][1] == own.get(f, before[f]), f


@pytest.mark.parametrize("cc", CC_NAMES)
def test_a_shift_moves_hpccs_int_timestamps_modulo_their_24_bits(cc):
    k = _kit(cc)
    k.A["h_t_ns"][0, :] = (1 << 24) - 5
    _shift(k.S, k.P, 0, 10)
    expect = 5 if cc == "hpcc" else (1 << 24) - 5  # only HPCC keeps per-hop INT times
    assert (k.A["h_t_ns"][0, :] == expect).all()


@pytest.mark.parametrize("cc", CC_NAMES)
def test_a_shift_moves_swifts_last_decrease(cc):
    k = _kit(cc)
    k.A["s_t_dec_ps"][0], k.A["s_t_dec_ps"][1] = 7_000, -1
    _shift(k.S, k.P, 0, 10)
    _shift(k.S, k.P, 1, 10)
    assert k.A["s_t_dec_ps"][0] == (17_000 if cc == "swift" else 7_000)
    assert k.A["s_t_dec_ps"][1] == -1  # no decrease yet: stays so
