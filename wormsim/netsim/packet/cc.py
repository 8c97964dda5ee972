"""The kernel's one choice of congestion control.

Every reaction the physics and Wormhole ask of a congestion control goes through a hook here,
which calls the module of ``P.cc`` (``cc_dcqcn``, ``cc_hpcc``, ``cc_timely``, ``cc_dctcp``,
``cc_swift``; the codes are named in :mod:`wormsim.netsim.cc_registry`). This module is the
kernel's half of the registry: a new congestion control is a module exporting every hook of
:data:`~wormsim.netsim.cc_registry.HOOKS` (``<name>_<hook>``, a no-op where it has nothing to
do), a registry row (its settings, state rows and traits), and one branch per hook below; nothing
else in the kernel names one.

The hooks:

- :func:`cc_on_start`: a QP starts sending at its line rate (its window already `P.win`).
- :func:`cc_on_ack`: an ACK, NACK or CNP-carrying ACK of an unfinished QP reached its sender.
- :func:`cc_on_finish`: a QP finished (its timers stop).
- :func:`cc_on_timer`: one of its timers is due (an ``EV_CC`` event with the control's own
  sub-code: DCQCN's alpha, decrease and increase).
- :func:`cc_stamps_int`: whether switches stamp in-band telemetry on data packets.
- :func:`cc_shift`: a skip moved a QP through time.
- :func:`cc_resume`: a flow skip ended: the sender starts its signal history again.
- :func:`cc_rate`: the rate the sender means to send at, which Wormhole's steadiness test
  samples.
- Wormhole's: :func:`adopt_rate` (put a sender at a rate), :func:`copy_cc` (give one QP another's
  state), :func:`save_cc` and :func:`restore_cc` (the ``CC_STATE`` values a memo entry keeps).
"""

from __future__ import annotations

from wormsim.netsim.cc_registry import CC_DCQCN, CC_DCTCP, CC_HPCC, CC_SWIFT, CC_TIMELY
from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet import cc_dcqcn as dcqcn
from wormsim.netsim.packet import cc_dctcp as dctcp
from wormsim.netsim.packet import cc_hpcc as hpcc
from wormsim.netsim.packet import cc_swift as swift
from wormsim.netsim.packet import cc_timely as timely
from wormsim.netsim.packet.nic import change_rate

__all__ = [
    "cc_on_start",
    "cc_on_ack",
    "cc_on_finish",
    "cc_on_timer",
    "cc_stamps_int",
    "cc_shift",
    "cc_resume",
    "cc_rate",
    "adopt_rate",
    "copy_cc",
    "save_cc",
    "restore_cc",
]


@njit(cache=True, inline="always")
def cc_on_start(S, P, q, rate):
    """QP ``q`` starts sending at ``rate`` (bit/s)."""
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_on_start(S, P, q, rate)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_on_start(S, P, q, rate)
    elif P.cc == CC_TIMELY:
        timely.timely_on_start(S, P, q, rate)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_on_start(S, P, q, rate)
    elif P.cc == CC_SWIFT:
        swift.swift_on_start(S, P, q, rate)


@njit(cache=True, inline="always")
def cc_on_ack(S, P, q, p, now):
    """ACK ``p`` of unfinished QP ``q`` reached its sender (sequence numbers already handled)."""
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_on_ack(S, P, q, p, now)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_on_ack(S, P, q, p, now)
    elif P.cc == CC_TIMELY:
        timely.timely_on_ack(S, P, q, p, now)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_on_ack(S, P, q, p, now)
    elif P.cc == CC_SWIFT:
        swift.swift_on_ack(S, P, q, p, now)


@njit(cache=True, inline="always")
def cc_on_finish(S, P, q):
    """QP ``q`` finished: its congestion control's timers stop."""
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_on_finish(S, P, q)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_on_finish(S, P, q)
    elif P.cc == CC_TIMELY:
        timely.timely_on_finish(S, P, q)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_on_finish(S, P, q)
    elif P.cc == CC_SWIFT:
        swift.swift_on_finish(S, P, q)


@njit(cache=True, inline="always")
def cc_on_timer(S, P, sub, arg, now):
    """A timer of the congestion control is due: an ``EV_CC`` event with its sub-code ``sub``
    and its ``arg`` (as ``core.push_cc_timer`` scheduled them); the control's module decides
    whether it still stands."""
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_on_timer(S, P, sub, arg, now)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_on_timer(S, P, sub, arg, now)
    elif P.cc == CC_TIMELY:
        timely.timely_on_timer(S, P, sub, arg, now)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_on_timer(S, P, sub, arg, now)
    elif P.cc == CC_SWIFT:
        swift.swift_on_timer(S, P, sub, arg, now)


@njit(cache=True, inline="always")
def cc_stamps_int(P):
    """Whether switches stamp in-band telemetry on data packets (HPCC)."""
    if P.cc == CC_DCQCN:
        return dcqcn.dcqcn_stamps_int(P)
    elif P.cc == CC_HPCC:
        return hpcc.hpcc_stamps_int(P)
    elif P.cc == CC_TIMELY:
        return timely.timely_stamps_int(P)
    elif P.cc == CC_DCTCP:
        return dctcp.dctcp_stamps_int(P)
    elif P.cc == CC_SWIFT:
        return swift.swift_stamps_int(P)
    return False  # not a registry code


@njit(cache=True, inline="always")
def cc_shift(S, P, q, dns):
    """QP ``q`` and its partition were moved ``dns`` ns through time (a skip): so is any time
    its congestion control keeps."""
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_shift(S, P, q, dns)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_shift(S, P, q, dns)
    elif P.cc == CC_TIMELY:
        timely.timely_shift(S, P, q, dns)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_shift(S, P, q, dns)
    elif P.cc == CC_SWIFT:
        swift.swift_shift(S, P, q, dns)


@njit(cache=True, inline="always")
def cc_resume(S, P, q):
    """A flow skip of QP ``q`` ended: its next ACK seeds the signal history again."""
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_resume(S, P, q)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_resume(S, P, q)
    elif P.cc == CC_TIMELY:
        timely.timely_resume(S, P, q)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_resume(S, P, q)
    elif P.cc == CC_SWIFT:
        swift.swift_resume(S, P, q)


@njit(cache=True, inline="always")
def cc_rate(S, P, q):
    """The rate (bit/s) QP ``q``'s congestion control means to send at: its rate variable, or
    for Swift its window per smoothed RTT."""
    if P.cc == CC_DCQCN:
        return dcqcn.dcqcn_rate(S, P, q)
    elif P.cc == CC_HPCC:
        return hpcc.hpcc_rate(S, P, q)
    elif P.cc == CC_TIMELY:
        return timely.timely_rate(S, P, q)
    elif P.cc == CC_DCTCP:
        return dctcp.dctcp_rate(S, P, q)
    elif P.cc == CC_SWIFT:
        return swift.swift_rate(S, P, q)
    return S.qp_rate_bps[q]  # not a registry code


@njit(cache=True, inline="always")
def _clamped(S, P, q, bps):
    """``bps`` within QP ``q``'s least rate and line rate."""
    return min(max(bps, P.min_rate_bps), S.qp_max_bps[q])


@njit(cache=True)
def adopt_rate(S, P, q, bps, now):
    """Put QP ``q``'s congestion control at ``bps`` (clamped to its min and line rate): the
    sending rate, HPCC's reference rate, TIMELY's rate, Swift's window; DCQCN keeps its target
    rate (its memory of the rate before the cut) and restarts its rate-increase timer (see
    ``cc_dcqcn.dcqcn_adopt``)."""
    rate = _clamped(S, P, q, bps)
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_adopt(S, P, q, rate, now)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_adopt(S, P, q, rate, now)
    elif P.cc == CC_TIMELY:
        timely.timely_adopt(S, P, q, rate, now)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_adopt(S, P, q, rate, now)
    elif P.cc == CC_SWIFT:
        swift.swift_adopt(S, P, q, rate, now)


@njit(cache=True)
def copy_cc(S, P, src, q, now):
    """Give QP ``q`` the congestion-control state of QP ``src``: its rate and the variables that
    follow the path's congestion (DCQCN's alpha, target and stage; HPCC's reference rate,
    increase stage and utilisation; TIMELY's rate, RTT and gradient; DCTCP's alpha; Swift's
    window and RTT), not its sequence numbers, timers or per-hop INT history, which belong to
    ``q``'s own packets and ports."""
    change_rate(S, P, q, S.qp_rate_bps[src], now)
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_copy(S, P, src, q, now)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_copy(S, P, src, q, now)
    elif P.cc == CC_TIMELY:
        timely.timely_copy(S, P, src, q, now)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_copy(S, P, src, q, now)
    elif P.cc == CC_SWIFT:
        swift.swift_copy(S, P, src, q, now)


@njit(cache=True)
def save_cc(S, P, q, out):
    """Write QP ``q``'s congestion-control state into ``out`` (``CC_STATE`` values), for a memo
    entry, at steady entry: its sending rate (bit/s, the mean over the detector's window: a
    windowed sender's rate can sit above what it delivers), then what the rate does not carry
    (each congestion control's ``*_save``). Sequence numbers and timers belong to the flow's
    own packets: not kept."""
    out[0] = S.wh_cring_bps[q].mean()  # the ring is full at steady entry
    out[1] = 0.0
    out[2] = 0.0
    out[3] = 0.0
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_save(S, P, q, out[1:])
    elif P.cc == CC_HPCC:
        hpcc.hpcc_save(S, P, q, out[1:])
    elif P.cc == CC_TIMELY:
        timely.timely_save(S, P, q, out[1:])
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_save(S, P, q, out[1:])
    elif P.cc == CC_SWIFT:
        swift.swift_save(S, P, q, out[1:])


@njit(cache=True)
def restore_cc(S, P, q, state, now):
    """Put QP ``q`` where a replayed transient left its sender: the state :func:`save_cc` wrote,
    at its stored sending rate clamped as in :func:`adopt_rate` (DCQCN restarts its timers, see
    ``cc_dcqcn.dcqcn_restore``). The sending rate, not the delivered one: a windowed sender's
    rate variable sits above what its window lets through, and DCTCP put at its delivered rate
    climbed back additively (15.6 % late on the parking-lot scenario)."""
    rate = _clamped(S, P, q, state[0])
    if P.cc == CC_DCQCN:
        dcqcn.dcqcn_restore(S, P, q, rate, state[1:], now)
    elif P.cc == CC_HPCC:
        hpcc.hpcc_restore(S, P, q, rate, state[1:], now)
    elif P.cc == CC_TIMELY:
        timely.timely_restore(S, P, q, rate, state[1:], now)
    elif P.cc == CC_DCTCP:
        dctcp.dctcp_restore(S, P, q, rate, state[1:], now)
    elif P.cc == CC_SWIFT:
        swift.swift_restore(S, P, q, rate, state[1:], now)
