"""HPCC (single-rate, ``MULTI_RATE 0``) as ``RdmaHw::UpdateRateHp`` in HPCC ns-3.

INT per hop: 24-bit ns timestamp, tx bytes in units of 128*INT_MULTI (20 bits), queue length in
units of 80*INT_MULTI (17 bits), line rate. A full update happens once per RTT (ACK beyond
``last_update_seq``), fast reaction on the other ACKs when FAST_REACT.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.nic import change_rate
from wormsim.netsim.packet.state import MAXHOP
from wormsim.units import S_PER_NS

_M24 = (1 << 24) - 1

__all__ = [
    "hpcc_on_start",
    "hpcc_on_ack",
    "hpcc_on_finish",
    "hpcc_on_timer",
    "hpcc_shift",
    "hpcc_resume",
    "hpcc_rate",
    "hpcc_adopt",
    "hpcc_copy",
    "hpcc_save",
    "hpcc_restore",
]


@njit(cache=True)
def _update(S, P, q, p, fast, now):
    next_seq = S.qp_nxt[q]
    nh = S.pk_nhop[p]
    if S.h_last_seq[q] == 0:
        S.h_last_seq[q] = next_seq
        for i in range(min(nh, MAXHOP)):
            S.h_t_ns[q, i] = S.pk_it_ns[p, i]
            S.h_b[q, i] = S.pk_ib[p, i]
            S.h_q[q, i] = S.pk_iq[p, i]
        return
    if nh <= MAXHOP:
        U = 0.0
        dt = 0
        updated = False
        unit_b = 128 * P.int_multi
        unit_q = 80 * P.int_multi
        for i in range(nh):
            t_new = S.pk_it_ns[p, i]
            t_old = S.h_t_ns[q, i]
            tau = t_new - t_old if t_new >= t_old else t_new + (1 << 24) - t_old
            b_new = S.pk_ib[p, i]
            b_old = S.h_b[q, i]
            db = (b_new - b_old if b_new >= b_old else b_new + (1 << 20) - b_old) * unit_b
            line = S.pk_ir_bps[p, i]
            qmin = min(S.pk_iq[p, i], S.h_q[q, i]) * unit_q
            if tau > 0:
                tx_rate = db * 8 / (tau * S_PER_NS)
                u = tx_rate / line + qmin * S.qp_max_bps[q] / line / S.qp_win[q]
                updated = True
                if u > U:
                    U = u
                    dt = tau
            S.h_t_ns[q, i] = t_new
            S.h_b[q, i] = b_new
            S.h_q[q, i] = S.pk_iq[p, i]
        new_rate = 0.0
        new_inc = 0
        if updated:
            base = P.base_rtt_ns
            if dt > base:
                dt = base
            S.h_u[q] = (S.h_u[q] * (base - dt) + U * dt) / base
            max_c = S.h_u[q] / P.u_target
            if max_c >= 1 or S.h_inc[q] >= P.mi_thresh:
                if max_c > 0.0:
                    new_rate = float(int(S.h_cur_bps[q] / max_c)) + P.rai_bps
                else:  # an idle path with MI_THRESH 0: ns-3 divides to inf, clamped to max
                    new_rate = S.qp_max_bps[q]
                new_inc = 0
            else:
                new_rate = S.h_cur_bps[q] + P.rai_bps
                new_inc = S.h_inc[q] + 1
            if new_rate < P.min_rate_bps:
                new_rate = P.min_rate_bps
            if new_rate > S.qp_max_bps[q]:
                new_rate = S.qp_max_bps[q]
            change_rate(S, P, q, new_rate, now)
            if not fast:
                S.h_cur_bps[q] = new_rate
                S.h_inc[q] = new_inc
    if not fast and next_seq > S.h_last_seq[q]:
        S.h_last_seq[q] = next_seq


@njit(cache=True)
def hpcc_on_ack(S, P, q, p, now):
    """Handle the INT feedback of an ACK/NACK."""
    fast = S.pk_seq[p] <= S.h_last_seq[q]  # not a new RTT: only a fast-react update
    if not fast or P.fast_react:
        _update(S, P, q, p, fast, now)


@njit(cache=True)
def hpcc_adopt(S, P, q, rate, now):
    """Put QP ``q`` at ``rate`` (bit/s): it becomes the reference rate, the stage restarts."""
    change_rate(S, P, q, rate, now)
    S.h_cur_bps[q] = rate
    S.h_inc[q] = 0


@njit(cache=True)
def hpcc_copy(S, P, src, q, now):
    """Give QP ``q`` the reference rate, stage and smoothed utilisation of QP ``src``."""
    S.h_cur_bps[q] = S.h_cur_bps[src]
    S.h_inc[q] = S.h_inc[src]
    S.h_u[q] = S.h_u[src]


@njit(cache=True)
def hpcc_save(S, P, q, out):
    """Write QP ``q``'s smoothed utilisation U and additive-increase stage into ``out``."""
    out[0] = S.h_u[q]
    out[1] = S.h_inc[q]


@njit(cache=True)
def hpcc_restore(S, P, q, rate, state, now):
    """Put QP ``q`` at ``rate`` (:func:`hpcc_adopt`) and put back what :func:`hpcc_save` wrote."""
    hpcc_adopt(S, P, q, rate, now)
    S.h_u[q] = state[0]
    S.h_inc[q] = int(state[1])


@njit(cache=True)
def hpcc_resume(S, P, q):
    """A flow skip ended: drop QP ``q``'s per-hop INT history, its next ACK seeds it again."""
    S.h_last_seq[q] = 0


@njit(cache=True)
def hpcc_on_start(S, P, q, rate):
    """QP ``q`` starts at ``rate`` (bit/s, its line rate): its reference rate."""
    S.h_cur_bps[q] = rate


@njit(cache=True, inline="always")
def hpcc_on_finish(S, P, q):
    """No timers to stop."""


@njit(cache=True, inline="always")
def hpcc_on_timer(S, P, sub, arg, now):
    """No timers."""


@njit(cache=True, inline="always")
def hpcc_rate(S, P, q):
    """Its rate variable."""
    return S.qp_rate_bps[q]


@njit(cache=True)
def hpcc_shift(S, P, q, dns):
    """QP ``q`` was moved ``dns`` ns through time: so are the INT timestamps it last saw (24-bit
    ns, as the switches stamp them), so the next ACK's intervals are those of the moved path."""
    for k in range(MAXHOP):
        S.h_t_ns[q, k] = (S.h_t_ns[q, k] + dns) & _M24
