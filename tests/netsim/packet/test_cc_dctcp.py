"""DCTCP's reaction to one ACK (``cc_dctcp.dctcp_on_ack``) against Alizadeh et al., SIGCOMM 2010,
in the rate-based form of HPCC ns-3 (``RdmaHw::HandleAckDctcp``), with its parameters: g = 1/16,
additive increase 615 Mbit/s per window, MIN_RATE 1 Gbit/s.

* Per window of data (an ACK beyond the end of the last one): ``alpha = (1 - g) alpha + g F``
  with ``F`` the fraction of the window's packets whose ACK carried the CNP flag (the window
  being ``(snd_nxt - ack) / MTU + 1`` packets when it opened).
* A marked ACK outside a reduction episode: ``R = max(MIN_RATE, R (1 - alpha / 2))`` and an
  episode that lasts until the ACKs pass what had been sent (``snd_nxt`` then).
* Outside an episode, each new window adds the additive increase (up to the line rate).
"""

from __future__ import annotations

import math

import pytest
from numba import njit

from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.cc_dctcp import dctcp_on_ack
from wormsim.netsim.packet.state import PK_ACK

from ._kit import Kit, alloc, kit

LINE = 100e9
Q = 0
G, RAI, MIN_RATE, MTU = 1 / 16, 615e6, 1e9, 1000


@njit
def _on_ack(S_, P_, q, p, now):
    dctcp_on_ack(S_, st.raw_params(P_), q, p, now)


def _state() -> Kit:
    k = kit("dctcp")
    k.start(Q)
    return k


def _ack(k: Kit, seq: int, cnp: bool) -> None:
    p = alloc(k, type=PK_ACK, flow=Q, seq=seq, cnp=int(cnp))
    _on_ack(k.S, k.P, Q, p, 0)


def test_the_parameters_are_ns3s():
    P = _state().P
    assert (P.cc, P.g, P.dctcp_rai_bps, P.min_rate_bps, P.mtu) == (8, G, RAI, MIN_RATE, MTU)


def test_the_first_ack_opens_a_window_and_increases():
    k = _state()
    A = k.A
    A["qp_rate_bps"][Q], A["qp_nxt"][Q] = 50e9, 12_345
    _ack(k, 1000, cnp=False)
    assert A["d_last_seq"][Q] == 12_345 and A["d_batch"][Q] == 12_345 // MTU + 1
    assert A["d_alpha"][Q] == 1.0  # alpha starts at 1, untouched by the first window
    assert A["qp_rate_bps"][Q] == 50e9 + RAI


def test_a_window_updates_alpha_with_its_marked_fraction():
    """A 10-packet window with 3 marked ACKs: alpha = (1 - g) alpha + g 3/10. The marks come
    during a reduction episode, so they cut the rate only once."""
    k = _state()
    A = k.A
    A["d_alpha"][Q], A["qp_rate_bps"][Q] = 0.5, 60e9
    A["d_last_seq"][Q], A["d_batch"][Q], A["qp_nxt"][Q] = 10_000, 10, 10_000
    for i, mark in enumerate([True, False, True, False, False, True, False, False, False]):
        _ack(k, 1000 * (i + 1), cnp=mark)
    assert A["d_ecn"][Q] == 3 and A["d_alpha"][Q] == 0.5  # not yet: the window is open
    cut = math.floor(60e9 * (1 - 0.5 / 2))
    assert A["qp_rate_bps"][Q] == cut  # the first mark, the episode until snd_nxt = 10 000
    A["qp_nxt"][Q] = 25_000
    _ack(k, 10_001, cnp=False)  # beyond the window: alpha, and past the episode's end
    assert A["d_alpha"][Q] == pytest.approx((1 - G) * 0.5 + G * 3 / 10, rel=1e-15)
    assert A["d_ecn"][Q] == 0 and A["d_last_seq"][Q] == 25_000
    assert A["d_batch"][Q] == (25_000 - 10_001) // MTU + 1
    assert A["d_ca"][Q] == 0
    assert A["qp_rate_bps"][Q] == cut + RAI


def test_the_marked_fraction_is_at_most_one():
    k = _state()
    A = k.A
    A["d_alpha"][Q], A["d_last_seq"][Q], A["d_batch"][Q], A["d_ecn"][Q] = 0.2, 1000, 2, 5
    A["qp_nxt"][Q] = 9000
    _ack(k, 2000, cnp=False)
    assert A["d_alpha"][Q] == pytest.approx((1 - G) * 0.2 + G)


def test_a_mark_cuts_by_half_alpha_with_the_alpha_of_its_window():
    """A marked ACK that closes a window cuts with the alpha just updated (ns-3's order)."""
    k = _state()
    A = k.A
    A["d_alpha"][Q], A["qp_rate_bps"][Q] = 0.4, 80e9
    A["d_last_seq"][Q], A["d_batch"][Q], A["d_ecn"][Q], A["qp_nxt"][Q] = 5000, 5, 1, 20_000
    _ack(k, 6000, cnp=True)
    alpha = (1 - G) * 0.4 + G * 2 / 5
    assert A["d_alpha"][Q] == pytest.approx(alpha, rel=1e-15)
    assert A["qp_rate_bps"][Q] == math.floor(80e9 * (1 - alpha / 2))
    assert A["d_ca"][Q] == 1 and A["d_high"][Q] == 20_000


def test_a_reduction_episode_blocks_cuts_and_increases_until_it_ends():
    """One cut per episode: marks before the ACKs pass the episode's end do nothing, nor does a
    new window's increase; the first ACK past it ends the episode (and increases), and the next
    mark cuts again."""
    k = _state()
    A = k.A
    A["d_alpha"][Q], A["qp_rate_bps"][Q] = 1.0, 80e9
    A["d_last_seq"][Q], A["d_batch"][Q], A["qp_nxt"][Q] = 1000, 1, 20_000
    _ack(k, 2000, cnp=True)  # closes the window (F = 1) and cuts: episode until 20 000
    assert A["d_alpha"][Q] == 1.0 and A["qp_rate_bps"][Q] == 40e9
    assert (A["d_ca"][Q], A["d_high"][Q], A["d_batch"][Q]) == (1, 20_000, 19)
    _ack(k, 10_000, cnp=True)  # inside the episode and the window
    assert A["qp_rate_bps"][Q] == 40e9 and A["d_ecn"][Q] == 1
    A["qp_nxt"][Q] = 30_000
    _ack(k, 20_001, cnp=False)  # past the window and the episode
    alpha = (1 - G) * 1.0 + G * 1 / 19
    assert A["d_alpha"][Q] == pytest.approx(alpha, rel=1e-15)
    assert A["d_ca"][Q] == 0 and A["qp_rate_bps"][Q] == 40e9 + RAI
    _ack(k, 25_000, cnp=True)  # a new episode: cut with the current alpha
    r = math.floor((40e9 + RAI) * (1 - alpha / 2))
    assert A["qp_rate_bps"][Q] == r and A["d_high"][Q] == 30_000
    _ack(k, 26_000, cnp=True)
    assert A["qp_rate_bps"][Q] == r


def test_additive_increase_once_per_window_up_to_the_line_rate():
    k = _state()
    A = k.A
    A["d_alpha"][Q], A["qp_rate_bps"][Q] = 0.0, LINE - 1e9
    A["d_last_seq"][Q], A["d_batch"][Q], A["qp_nxt"][Q] = 1000, 1, 5000
    _ack(k, 1500, cnp=False)  # new window: + RAI
    _ack(k, 3000, cnp=False)  # same window (ends at 5000): nothing
    assert A["qp_rate_bps"][Q] == LINE - 1e9 + RAI
    A["qp_nxt"][Q] = 9000
    _ack(k, 5001, cnp=False)  # next window: + RAI, capped
    assert A["qp_rate_bps"][Q] == LINE


def test_a_cut_stops_at_min_rate():
    k = _state()
    A = k.A
    A["d_alpha"][Q], A["qp_rate_bps"][Q] = 1.0, 1.5e9
    A["d_last_seq"][Q] = A["qp_nxt"][Q] = 9000
    _ack(k, 100, cnp=True)  # inside the window: the cut alone
    assert A["qp_rate_bps"][Q] == MIN_RATE
