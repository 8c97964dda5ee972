"""DCTCP (rate-based) as ``RdmaHw::HandleAckDctcp`` in HPCC ns-3."""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.nic import change_rate
from wormsim.netsim.packet.state import C_CNP

__all__ = [
    "dctcp_on_start",
    "dctcp_on_ack",
    "dctcp_on_finish",
    "dctcp_on_timer",
    "dctcp_shift",
    "dctcp_resume",
    "dctcp_rate",
    "dctcp_adopt",
    "dctcp_copy",
    "dctcp_save",
    "dctcp_restore",
]


@njit(cache=True)
def dctcp_on_ack(S, P, q, p, now):
    """Alpha update once per window of data, multiplicative decrease on ECN, additive increase;
    a CNP-flagged ACK counts in ``C_CNP``."""
    ack_seq = S.pk_seq[p]
    cnp = S.pk_cnp[p]
    if cnp:
        S.cnt[C_CNP] += 1
    new_batch = False
    if cnp:
        S.d_ecn[q] += 1
    if ack_seq > S.d_last_seq[q]:
        new_batch = True
        if S.d_last_seq[q] == 0:
            S.d_last_seq[q] = S.qp_nxt[q]
            S.d_batch[q] = S.qp_nxt[q] // P.mtu + 1
        else:
            frac = min(1.0, S.d_ecn[q] / S.d_batch[q])
            S.d_alpha[q] = (1 - P.g) * S.d_alpha[q] + P.g * frac
            S.d_last_seq[q] = S.qp_nxt[q]
            S.d_ecn[q] = 0
            S.d_batch[q] = (S.qp_nxt[q] - ack_seq) // P.mtu + 1
    if S.d_ca[q] == 1 and ack_seq > S.d_high[q]:
        S.d_ca[q] = 0
    if cnp and S.d_ca[q] == 0:
        S.qp_rate_bps[q] = max(
            P.min_rate_bps, float(int(S.qp_rate_bps[q] * (1 - S.d_alpha[q] / 2)))
        )
        S.d_ca[q] = 1
        S.d_high[q] = S.qp_nxt[q]
    if S.d_ca[q] == 0 and new_batch:
        S.qp_rate_bps[q] = min(S.qp_max_bps[q], S.qp_rate_bps[q] + P.dctcp_rai_bps)


@njit(cache=True)
def dctcp_copy(S, P, src, q, now):
    """Give QP ``q`` the alpha of QP ``src``."""
    S.d_alpha[q] = S.d_alpha[src]


@njit(cache=True)
def dctcp_save(S, P, q, out):
    """Write QP ``q``'s alpha into ``out``."""
    out[0] = S.d_alpha[q]


@njit(cache=True)
def dctcp_adopt(S, P, q, rate, now):
    """Put QP ``q`` at ``rate`` (bit/s): its sending rate is all DCTCP's rate is."""
    change_rate(S, P, q, rate, now)


@njit(cache=True)
def dctcp_restore(S, P, q, rate, state, now):
    """Put QP ``q`` at ``rate`` and put back what :func:`dctcp_save` wrote."""
    dctcp_adopt(S, P, q, rate, now)
    S.d_alpha[q] = state[0]


@njit(cache=True, inline="always")
def dctcp_on_start(S, P, q, rate):
    """Nothing besides the sending rate the NIC set."""


@njit(cache=True, inline="always")
def dctcp_on_finish(S, P, q):
    """No timers to stop."""


@njit(cache=True, inline="always")
def dctcp_on_timer(S, P, sub, arg, now):
    """No timers."""


@njit(cache=True, inline="always")
def dctcp_shift(S, P, q, dns):
    """No time kept."""


@njit(cache=True, inline="always")
def dctcp_resume(S, P, q):
    """Its window of marks carries on."""


@njit(cache=True, inline="always")
def dctcp_rate(S, P, q):
    """Its rate variable."""
    return S.qp_rate_bps[q]
