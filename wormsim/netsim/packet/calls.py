"""The calls of the physics' event handlers through their addresses in ``P``.

Each function here has the signature of the handler it reaches (:data:`~.handlers.HANDLERS`)
and calls the compiled handler at ``P.fn_<name>``: callers write ``calls.nic_dequeue(S, P,
port, now)`` where they would call ``nic.nic_dequeue``, and do not compile the handler into
themselves (see :mod:`~wormsim.netsim.packet.handlers` for why).
"""

from __future__ import annotations

from numba.core import types

from wormsim.netsim.common.jit import njit
from wormsim.netsim.packet.handlers import HANDLERS
from wormsim.netsim.packet.indirect import indirect_call

__all__ = list(HANDLERS)


def _call(name: str):
    """The intrinsic that calls handler ``name`` at its address."""
    return indirect_call(types.none, HANDLERS[name].args)


_ARRIVE = _call("arrive")


@njit(inline="always")
def arrive(S, P, p, port, now):
    """``engine.arrive``."""
    _ARRIVE(P.fn_arrive, (S, P, p, port, now))


_SWITCH_RECEIVE = _call("switch_receive")


@njit(inline="always")
def switch_receive(S, P, p, in_port, now):
    """``switch.switch_receive``."""
    _SWITCH_RECEIVE(P.fn_switch_receive, (S, P, p, in_port, now))


_SWITCH_DEQUEUE = _call("switch_dequeue")


@njit(inline="always")
def switch_dequeue(S, P, port, now):
    """``switch.switch_dequeue``."""
    _SWITCH_DEQUEUE(P.fn_switch_dequeue, (S, P, port, now))


_SEND_PFC = _call("send_pfc")


@njit(inline="always")
def send_pfc(S, P, port, pause, now):
    """``switch._send_pfc``."""
    _SEND_PFC(P.fn_send_pfc, (S, P, port, pause, now))


_NIC_DEQUEUE = _call("nic_dequeue")


@njit(inline="always")
def nic_dequeue(S, P, port, now):
    """``nic.nic_dequeue``."""
    _NIC_DEQUEUE(P.fn_nic_dequeue, (S, P, port, now))


_RECEIVE_ACK = _call("receive_ack")


@njit(inline="always")
def receive_ack(S, P, p, now):
    """``host.receive_ack``."""
    _RECEIVE_ACK(P.fn_receive_ack, (S, P, p, now))


_RECEIVE_DATA = _call("receive_data")


@njit(inline="always")
def receive_data(S, P, p, now):
    """``host._receive_data``."""
    _RECEIVE_DATA(P.fn_receive_data, (S, P, p, now))


_DAG_DONE_EVENT = _call("dag_done_event")


@njit(inline="always")
def dag_done_event(S, P, v, now):
    """``dag_exec.dag_done_event``."""
    _DAG_DONE_EVENT(P.fn_dag_done_event, (S, P, v, now))


_FLUID_EVENT = _call("fluid_event")


@njit(inline="always")
def fluid_event(S, P, gen, now):
    """``dag_exec.fluid_event``."""
    _FLUID_EVENT(P.fn_fluid_event, (S, P, gen, now))


_QP_START_EVENT = _call("qp_start_event")


@njit(inline="always")
def qp_start_event(S, P, arg, now):
    """``dag_exec.qp_start_event``."""
    _QP_START_EVENT(P.fn_qp_start_event, (S, P, arg, now))


_FINISH_NODE = _call("finish_node")


@njit(inline="always")
def finish_node(S, P, v, now):
    """``dag_exec.finish_node``."""
    _FINISH_NODE(P.fn_finish_node, (S, P, v, now))


_RELEASE = _call("release")


@njit(inline="always")
def release(S, P, v, now):
    """``dag_exec.release``."""
    _RELEASE(P.fn_release, (S, P, v, now))


_FLUID_RATES = _call("fluid_rates")


@njit(inline="always")
def fluid_rates(S, P, now):
    """``dag_exec._fluid_rates``."""
    _FLUID_RATES(P.fn_fluid_rates, (S, P, now))
