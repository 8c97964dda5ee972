"""TIMELY as ``RdmaHw::UpdateRateTimely`` in HPCC ns-3 (RTT from the data packet's send time)."""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.nic import change_rate
from wormsim.units import PS_PER_NS

__all__ = [
    "timely_on_start",
    "timely_on_ack",
    "timely_on_finish",
    "timely_on_timer",
    "timely_shift",
    "timely_resume",
    "timely_rate",
    "timely_adopt",
    "timely_copy",
    "timely_save",
    "timely_restore",
]


@njit(cache=True)
def timely_on_ack(S, P, q, p, now):
    """Once per RTT (ACK beyond ``last_update_seq``), adjust the rate from the RTT gradient."""
    if S.pk_seq[p] <= S.t_last_seq[q]:
        return  # fast reaction is a no-op in ns-3
    next_seq = S.qp_nxt[q]
    rtt = now // PS_PER_NS - S.pk_ts_ns[p]
    if S.t_last_seq[q] != 0:
        new_diff = rtt - S.t_last_rtt_ns[q]
        rtt_diff = (1 - P.t_alpha) * S.t_rtt_diff_ns[q] + P.t_alpha * new_diff
        gradient = rtt_diff / P.t_minrtt_ns
        inc = False
        c = 0.0
        if rtt < P.t_low_ns:
            inc = True
        elif rtt > P.t_high_ns:
            c = 1 - P.t_beta * (1 - P.t_high_ns / rtt)
        elif gradient <= 0:
            inc = True
        else:
            c = 1 - P.t_beta * gradient
            if c < 0:
                c = 0.0
        if inc:
            if S.t_inc[q] < 5:
                r = S.t_cur_bps[q] + P.rai_bps
            else:
                r = S.t_cur_bps[q] + P.rhai_bps
            if r > S.qp_max_bps[q]:
                r = S.qp_max_bps[q]
            S.qp_rate_bps[q] = r
            S.t_inc[q] += 1
        else:
            S.qp_rate_bps[q] = max(P.min_rate_bps, float(int(S.t_cur_bps[q] * c)))
            S.t_inc[q] = 0
        S.t_cur_bps[q] = S.qp_rate_bps[q]
        S.t_rtt_diff_ns[q] = rtt_diff
    if next_seq > S.t_last_seq[q]:
        S.t_last_seq[q] = next_seq
        S.t_last_rtt_ns[q] = rtt


@njit(cache=True)
def timely_adopt(S, P, q, rate, now):
    """Put QP ``q`` at ``rate`` (bit/s): TIMELY's rate variable takes it."""
    change_rate(S, P, q, rate, now)
    S.t_cur_bps[q] = rate


@njit(cache=True)
def timely_copy(S, P, src, q, now):
    """Give QP ``q`` the rate, increases in a row, RTT and RTT gradient of QP ``src``."""
    S.t_cur_bps[q] = S.t_cur_bps[src]
    S.t_inc[q] = S.t_inc[src]
    S.t_last_rtt_ns[q] = S.t_last_rtt_ns[src]
    S.t_rtt_diff_ns[q] = S.t_rtt_diff_ns[src]


@njit(cache=True)
def timely_save(S, P, q, out):
    """Write QP ``q``'s increases in a row, smoothed RTT difference and last RTT into ``out``."""
    out[0] = S.t_inc[q]
    out[1] = S.t_rtt_diff_ns[q]
    out[2] = S.t_last_rtt_ns[q]


@njit(cache=True)
def timely_restore(S, P, q, rate, state, now):
    """Put QP ``q`` at ``rate`` (:func:`timely_adopt`) and put back what :func:`timely_save`
    wrote."""
    timely_adopt(S, P, q, rate, now)
    S.t_inc[q] = int(state[0])
    S.t_rtt_diff_ns[q] = state[1]
    S.t_last_rtt_ns[q] = int(state[2])


@njit(cache=True)
def timely_on_start(S, P, q, rate):
    """QP ``q`` starts at ``rate`` (bit/s, its line rate): its rate variable."""
    S.t_cur_bps[q] = rate


@njit(cache=True, inline="always")
def timely_on_finish(S, P, q):
    """No timers to stop."""


@njit(cache=True, inline="always")
def timely_on_timer(S, P, sub, arg, now):
    """No timers."""


@njit(cache=True, inline="always")
def timely_shift(S, P, q, dns):
    """No absolute time kept (RTTs are differences)."""


@njit(cache=True, inline="always")
def timely_resume(S, P, q):
    """Its RTT history carries on."""


@njit(cache=True, inline="always")
def timely_rate(S, P, q):
    """Its rate variable."""
    return S.qp_rate_bps[q]
