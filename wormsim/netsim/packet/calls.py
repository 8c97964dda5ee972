"""The calls of the physics' event handlers through their addresses in ``P``.

Each name here calls the handler of that name in :data:`~.handlers.HANDLERS` through
``P.fn_<name>``, with the handler's arguments: callers write ``calls.nic_dequeue(S, P, port,
now)`` where they would call ``nic.nic_dequeue``, and do not compile the handler into
themselves (see :mod:`~wormsim.netsim.packet.handlers` for why).
"""

from __future__ import annotations

from wormsim.netsim.packet.handlers import HANDLERS
from wormsim.netsim.packet.indirect import linked_calls

__all__ = list(HANDLERS)

_CALLS = linked_calls(HANDLERS, "fn_")

arrive = _CALLS["arrive"]
switch_receive = _CALLS["switch_receive"]
switch_dequeue = _CALLS["switch_dequeue"]
send_pfc = _CALLS["send_pfc"]
nic_dequeue = _CALLS["nic_dequeue"]
receive_ack = _CALLS["receive_ack"]
receive_data = _CALLS["receive_data"]
dag_done_event = _CALLS["dag_done_event"]
fluid_event = _CALLS["fluid_event"]
qp_start_event = _CALLS["qp_start_event"]
finish_node = _CALLS["finish_node"]
release = _CALLS["release"]
fluid_rates = _CALLS["fluid_rates"]
