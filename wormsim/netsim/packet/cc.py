"""The kernel's one choice of congestion control.

Every reaction the physics and Wormhole ask of a congestion control goes through a hook here.
A hook calls the run's control through an address in ``P`` (``P.cc_fn_<hook>``), which
:func:`wormsim.netsim.packet.cc_link.hook_addresses` fills with the compiled
``<name>_<hook>`` of the control's module (``cc_dcqcn``, ``cc_hpcc``, ``cc_timely``,
``cc_dctcp``, ``cc_swift``; named by its :mod:`~wormsim.netsim.cc_registry` row). So the physics
compiles once, with no control in it; a run compiles its own control's hooks only, and an edit to
one control recompiles that control alone. A new congestion control is a module exporting every
hook of :data:`HOOK_TYPES` (a no-op where it has nothing to do) and a registry row; nothing here
changes.

The hooks:

- :func:`cc_on_start`: a QP starts sending at its line rate (its window already `P.win`).
- :func:`cc_on_ack`: an ACK, NACK or CNP-carrying ACK of an unfinished QP reached its sender.
- :func:`cc_on_finish`: a QP finished (its timers stop).
- :func:`cc_on_timer`: one of its timers is due (an ``EV_CC`` event with the control's own
  sub-code: DCQCN's alpha, decrease and increase).
- :func:`cc_shift`: a skip moved a QP through time.
- :func:`cc_resume`: a flow skip ended: the sender starts its signal history again.
- :func:`cc_rate`: the rate the sender means to send at, which Wormhole's steadiness test
  samples.
- Wormhole's: :func:`adopt_rate` (put a sender at a rate), :func:`copy_cc` (give one QP another's
  state), :func:`save_cc` and :func:`restore_cc` (the ``CC_STATE`` values a memo entry keeps).

Whether switches stamp in-band telemetry is a trait of the registry row (``P.int_stamp``), not
a hook: it is asked for every data packet at every hop.
"""

from __future__ import annotations

from numba.core import types

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.indirect import linked_call
from wormsim.netsim.packet.nic import change_rate

__all__ = [
    "HOOK_TYPES",
    "cc_on_start",
    "cc_on_ack",
    "cc_on_finish",
    "cc_on_timer",
    "cc_shift",
    "cc_resume",
    "cc_rate",
    "adopt_rate",
    "copy_cc",
    "save_cc",
    "restore_cc",
]

_I, _F = types.int64, types.float64
_VALUES = types.Array(types.float64, 1, "A")

HOOK_TYPES: dict[str, tuple[types.Type, tuple[types.Type, ...]]] = {
    "on_start": (types.none, (_I, _F)),  # q, rate (bit/s)
    "on_ack": (types.none, (_I, _I, _I)),  # q, p (the ACK's packet), now (ps)
    "on_finish": (types.none, (_I,)),  # q
    "on_timer": (types.none, (_I, _I, _I)),  # sub, arg, now (ps)
    "shift": (types.none, (_I, _I)),  # q, dns (ns)
    "resume": (types.none, (_I,)),  # q
    "rate": (_F, (_I,)),  # q -> bit/s
    "adopt": (types.none, (_I, _F, _I)),  # q, rate (bit/s, clamped), now (ps)
    "copy": (types.none, (_I, _I, _I)),  # src, q, now (ps)
    "save": (types.none, (_I, _VALUES)),  # q, out
    "restore": (types.none, (_I, _F, _VALUES, _I)),  # q, rate (bit/s), state, now (ps)
}
"""Each hook's return type and its arguments after ``(S, P)``: the signature a control's
``<name>_<hook>`` is compiled for and called with (``cc_registry.HOOKS`` names them in order)."""


def _hook_call(hook: str):
    """The intrinsic that calls hook ``hook`` of the run's control at its address, with its
    arguments cast to :data:`HOOK_TYPES`."""
    restype, wanted = HOOK_TYPES[hook]
    return linked_call(f"cc_fn_{hook}", restype, wanted)


_ON_START = _hook_call("on_start")
_ON_ACK = _hook_call("on_ack")
_ON_FINISH = _hook_call("on_finish")
_ON_TIMER = _hook_call("on_timer")
_SHIFT = _hook_call("shift")
_RESUME = _hook_call("resume")
_RATE = _hook_call("rate")
_ADOPT = _hook_call("adopt")
_COPY = _hook_call("copy")
_SAVE = _hook_call("save")
_RESTORE = _hook_call("restore")


@njit(cache=True, inline="always")
def cc_on_start(S, P, q, rate):
    """QP ``q`` starts sending at ``rate`` (bit/s)."""
    _ON_START(S, P, q, rate)


@njit(cache=True, inline="always")
def cc_on_ack(S, P, q, p, now):
    """ACK ``p`` of unfinished QP ``q`` reached its sender (sequence numbers already handled)."""
    _ON_ACK(S, P, q, p, now)


@njit(cache=True, inline="always")
def cc_on_finish(S, P, q):
    """QP ``q`` finished: its congestion control's timers stop."""
    _ON_FINISH(S, P, q)


@njit(cache=True, inline="always")
def cc_on_timer(S, P, sub, arg, now):
    """A timer of the congestion control is due: an ``EV_CC`` event with its sub-code ``sub``
    and its ``arg`` (as ``core.push_cc_timer`` scheduled them); the control's module decides
    whether it still stands."""
    _ON_TIMER(S, P, sub, arg, now)


@njit(cache=True, inline="always")
def cc_shift(S, P, q, dns):
    """QP ``q`` and its partition were moved ``dns`` ns through time (a skip): so is any time
    its congestion control keeps."""
    _SHIFT(S, P, q, dns)


@njit(cache=True, inline="always")
def cc_resume(S, P, q):
    """A flow skip of QP ``q`` ended: its next ACK seeds the signal history again."""
    _RESUME(S, P, q)


@njit(cache=True, inline="always")
def cc_rate(S, P, q):
    """The rate (bit/s) QP ``q``'s congestion control means to send at: its rate variable, or
    for Swift its window per smoothed RTT."""
    return _RATE(S, P, q)


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
    _ADOPT(S, P, q, _clamped(S, P, q, bps), now)


@njit(cache=True)
def copy_cc(S, P, src, q, now):
    """Give QP ``q`` the congestion-control state of QP ``src``: its rate and the variables that
    follow the path's congestion (DCQCN's alpha, target and stage; HPCC's reference rate,
    increase stage and utilisation; TIMELY's rate, RTT and gradient; DCTCP's alpha; Swift's
    window and RTT), not its sequence numbers, timers or per-hop INT history, which belong to
    ``q``'s own packets and ports."""
    change_rate(S, P, q, S.qp_rate_bps[src], now)
    _COPY(S, P, src, q, now)


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
    _SAVE(S, P, q, out[1:])


@njit(cache=True)
def restore_cc(S, P, q, state, now):
    """Put QP ``q`` where a replayed transient left its sender: the state :func:`save_cc` wrote,
    at its stored sending rate clamped as in :func:`adopt_rate` (DCQCN restarts its timers, see
    ``cc_dcqcn.dcqcn_restore``). The sending rate, not the delivered one: a windowed sender's
    rate variable sits above what its window lets through, and DCTCP put at its delivered rate
    climbed back additively (15.6 % late on the parking-lot scenario)."""
    _RESTORE(S, P, q, _clamped(S, P, q, state[0]), state[1:], now)
