"""The calls of the physics' event handlers through their addresses in ``P``.

Each name here calls the handler of that name in :data:`~.handlers.HANDLERS` through
``P.fn_<name>``, with the handler's arguments: callers write ``calls.nic_dequeue(S, P, port,
now)`` where they would call ``nic.nic_dequeue``, and do not compile the handler into
themselves (see :mod:`~wormsim.netsim.packet.handlers` for why).
"""

from __future__ import annotations

from numba.core import types

from wormsim.netsim.packet.handlers import HANDLERS
from wormsim.netsim.packet.indirect import linked_call

__all__ = list(HANDLERS)


def _call(name: str):
    """The call of ``HANDLERS[name]`` through ``P.fn_<name>``."""
    return linked_call(f"fn_{name}", types.none, HANDLERS[name].args)


arrive = _call("arrive")
switch_receive = _call("switch_receive")
switch_dequeue = _call("switch_dequeue")
send_pfc = _call("send_pfc")
nic_dequeue = _call("nic_dequeue")
receive_ack = _call("receive_ack")
receive_data = _call("receive_data")
dag_done_event = _call("dag_done_event")
fluid_event = _call("fluid_event")
qp_start_event = _call("qp_start_event")
finish_node = _call("finish_node")
release = _call("release")
fluid_rates = _call("fluid_rates")
