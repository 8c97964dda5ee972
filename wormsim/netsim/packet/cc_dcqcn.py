"""DCQCN, Mellanox flavour, as ``RdmaHw`` (``*Mlx``) in HPCC ns-3.

CNPs arrive as the CNP flag of ACKs (the receiver sets it when the data packet was ECN-marked).
The first CNP sets alpha = 1 and starts the alpha timer (every ALPHA_RESUME_INTERVAL) and the
rate-decrease timer (every RATE_DECREASE_INTERVAL, first one 1 ns later); a decrease restarts the
rate-increase timer (RP_TIMER): fast recovery, then additive (RATE_AI), then hyper (RATE_HAI).
Its three timers are ``EV_CC`` events with this module's sub-codes (:data:`T_ALPHA`,
:data:`T_DEC`, :data:`T_RP`) and ``arg = q | gen << 24``; a timer is cancelled by bumping a per-QP
generation number (``g_alpha``, ``g_dec``, ``g_rp``) that the event carries.
"""

from __future__ import annotations

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.core import push_cc_timer
from wormsim.netsim.packet.nic import change_rate
from wormsim.netsim.packet.state import C_CNP
from wormsim.units import PS_PER_NS

__all__ = [
    "T_ALPHA",
    "T_DEC",
    "T_RP",
    "dcqcn_on_start",
    "dcqcn_on_ack",
    "dcqcn_on_finish",
    "dcqcn_on_timer",
    "dcqcn_shift",
    "dcqcn_resume",
    "dcqcn_rate",
    "dcqcn_adopt",
    "dcqcn_copy",
    "dcqcn_save",
    "dcqcn_restore",
    "dcqcn_cnp",
    "dcqcn_alpha",
    "dcqcn_decrease",
    "dcqcn_rate_increase",
    "dcqcn_start_timers",
]

# its timers' sub-codes of ``EV_CC`` (``cc.cc_on_timer`` hands them to :func:`dcqcn_on_timer`)
T_ALPHA = 0  # alpha update (ALPHA_RESUME_INTERVAL)
T_DEC = 1  # rate-decrease check (RATE_DECREASE_INTERVAL)
T_RP = 2  # rate increase (RP_TIMER)

_M24 = (1 << 24) - 1


@njit(cache=True, inline="always")
def _owner(P, q):
    return P.n_ports + q


@njit(cache=True)
def _sched_alpha(S, P, q, now):
    push_cc_timer(S, now + P.alpha_ps, T_ALPHA, (S.g_alpha[q] << 24) | q, _owner(P, q))


@njit(cache=True)
def _sched_dec(S, P, q, now, extra):
    push_cc_timer(S, now + P.dec_ps + extra, T_DEC, (S.g_dec[q] << 24) | q, _owner(P, q))


@njit(cache=True)
def _sched_rp(S, P, q, now):
    S.g_rp[q] += 1
    push_cc_timer(S, now + P.rp_ps, T_RP, (S.g_rp[q] << 24) | q, _owner(P, q))


@njit(cache=True)
def dcqcn_cnp(S, P, q, now):
    """An ACK with the CNP flag reached the sender."""
    S.m_alpha_cnp[q] = 1
    S.m_dec_cnp[q] = 1
    if S.m_first[q]:
        S.m_alpha[q] = 1.0
        S.m_alpha_cnp[q] = 0
        _sched_alpha(S, P, q, now)
        _sched_dec(S, P, q, now, PS_PER_NS)
        r = float(int(P.first_cnp_frac * S.qp_rate_bps[q]))
        S.qp_rate_bps[q] = r
        S.m_target_bps[q] = r
        S.m_first[q] = 0


@njit(cache=True)
def dcqcn_on_ack(S, P, q, p, now):
    """An ACK of QP ``q``: DCQCN acts on the CNP it may carry (its rate moves on its timers)."""
    if S.pk_cnp[p]:
        S.cnt[C_CNP] += 1
        dcqcn_cnp(S, P, q, now)


@njit(cache=True)
def dcqcn_alpha(S, P, q, now):
    """Alpha timer."""
    if S.m_alpha_cnp[q]:
        S.m_alpha[q] = (1 - P.g) * S.m_alpha[q] + P.g
    else:
        S.m_alpha[q] = (1 - P.g) * S.m_alpha[q]
    S.m_alpha_cnp[q] = 0
    _sched_alpha(S, P, q, now)


@njit(cache=True)
def dcqcn_decrease(S, P, q, now):
    """Rate-decrease check timer."""
    _sched_dec(S, P, q, now, 0)
    if S.m_dec_cnp[q]:
        clamp = True
        if not P.clamp and S.m_stage[q] == 0:
            clamp = False
        if clamp:
            S.m_target_bps[q] = S.qp_rate_bps[q]
        S.qp_rate_bps[q] = max(
            P.min_rate_bps, float(int(S.qp_rate_bps[q] * (1 - S.m_alpha[q] / 2)))
        )
        S.m_stage[q] = 0
        S.m_dec_cnp[q] = 0
        _sched_rp(S, P, q, now)


@njit(cache=True)
def dcqcn_rate_increase(S, P, q, now):
    """Rate-increase (RP) timer."""
    _sched_rp(S, P, q, now)
    st = S.m_stage[q]
    if st < P.frt:
        pass
    elif st == P.frt:
        S.m_target_bps[q] = min(S.m_target_bps[q] + P.rai_bps, S.qp_max_bps[q])
    else:
        S.m_target_bps[q] = min(S.m_target_bps[q] + P.rhai_bps, S.qp_max_bps[q])
    S.qp_rate_bps[q] = float(int(S.qp_rate_bps[q] / 2) + int(S.m_target_bps[q] / 2))
    S.m_stage[q] = st + 1


@njit(cache=True)
def dcqcn_on_finish(S, P, q):
    """Cancel the three timers of a finished QP."""
    S.g_alpha[q] += 1
    S.g_dec[q] += 1
    S.g_rp[q] += 1


@njit(cache=True)
def dcqcn_on_timer(S, P, sub, arg, now):
    """Timer ``sub`` (:data:`T_ALPHA`, :data:`T_DEC`, :data:`T_RP`) with ``arg = q | gen << 24``:
    acted on if it was not cancelled since it was scheduled (its QP's generation still
    ``gen``)."""
    q = arg & _M24
    gen = arg >> 24
    if sub == T_ALPHA:
        if gen == S.g_alpha[q]:
            dcqcn_alpha(S, P, q, now)
    elif sub == T_DEC:
        if gen == S.g_dec[q]:
            dcqcn_decrease(S, P, q, now)
    elif sub == T_RP:
        if gen == S.g_rp[q]:
            dcqcn_rate_increase(S, P, q, now)


@njit(cache=True)
def dcqcn_adopt(S, P, q, rate, now):
    """Put the sender at ``rate`` as if a decrease had brought it there (Wormhole memo hits): the
    target keeps the rate before the cut and the rate-increase timer restarts, so the flow
    recovers once whatever cut it is gone (a bare rate change would leave it there for good:
    DCQCN only raises its rate on that timer)."""
    if rate < S.qp_rate_bps[q]:
        S.m_stage[q] = 0
        _sched_rp(S, P, q, now)
    change_rate(S, P, q, rate, now)


@njit(cache=True)
def dcqcn_start_timers(S, P, q, now):
    """Start the alpha, rate-decrease and rate-increase timers of a QP that takes over the state
    of one already past its first CNP (Wormhole shared transients)."""
    _sched_alpha(S, P, q, now)
    _sched_dec(S, P, q, now, PS_PER_NS)
    _sched_rp(S, P, q, now)


@njit(cache=True)
def dcqcn_save(S, P, q, out):
    """Write QP ``q``'s alpha, target rate and rate-increase stage into ``out``."""
    out[0] = S.m_alpha[q]
    out[1] = S.m_target_bps[q]
    out[2] = S.m_stage[q]


@njit(cache=True)
def dcqcn_restore(S, P, q, rate, state, now):
    """Put QP ``q`` where a replayed transient left its DCQCN sender: ``rate`` and ``state``
    (alpha, target, stage, as :func:`dcqcn_save` wrote them), its timers running (started
    now if it had not seen a CNP yet; the rate-increase timer restarts)."""
    if S.m_first[q]:
        _sched_alpha(S, P, q, now)
        _sched_dec(S, P, q, now, PS_PER_NS)
        S.m_first[q] = 0
    S.m_alpha[q] = state[0]
    S.m_target_bps[q] = min(state[1], S.qp_max_bps[q])
    S.m_stage[q] = int(state[2])
    _sched_rp(S, P, q, now)
    change_rate(S, P, q, rate, now)


@njit(cache=True)
def dcqcn_copy(S, P, src, q, now):
    """Give QP ``q`` the DCQCN state of QP ``src`` (alpha, CNP flags, stage, target rate), its
    timers started if ``src`` is past its first CNP and ``q`` is not."""
    if S.m_first[q] and not S.m_first[src]:
        dcqcn_start_timers(S, P, q, now)
    S.m_alpha[q] = S.m_alpha[src]
    S.m_alpha_cnp[q] = S.m_alpha_cnp[src]
    S.m_dec_cnp[q] = S.m_dec_cnp[src]
    S.m_first[q] = S.m_first[src]
    S.m_stage[q] = S.m_stage[src]
    S.m_target_bps[q] = S.m_target_bps[src]


@njit(cache=True)
def dcqcn_on_start(S, P, q, rate):
    """QP ``q`` starts at ``rate`` (bit/s, its line rate): its target rate."""
    S.m_target_bps[q] = rate


@njit(cache=True, inline="always")
def dcqcn_shift(S, P, q, dns):
    """No time kept besides its timers (events, which the skip moves)."""


@njit(cache=True, inline="always")
def dcqcn_resume(S, P, q):
    """No signal history to restart."""


@njit(cache=True, inline="always")
def dcqcn_rate(S, P, q):
    """Its rate variable."""
    return S.qp_rate_bps[q]
