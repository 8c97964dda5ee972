"""The seam between the packet physics and Wormhole: the one Wormhole module the physics imports.

Each hook is a small function inlined into the physics code that calls it (``inline="always"``,
so the seam adds no call) and does nothing in packet mode: it tests the Wormhole flag of ``P``
that decides whether Wormhole acts there (``wh_ps > 0``: a Wormhole run; ``wh_data_only``:
partitions over data ports, with tunnels and phantom ACK loads; ``wh_flow``: flow skips) and only
then calls into Wormhole. The hooks:

- :func:`kernel_start`, :func:`heap_reserve`, :func:`drop_stale`, :func:`parked_only`,
  :func:`live_events` and :func:`wh_event`: the event loop (Wormhole's sampler, its room in the
  heap, the landings of rolled-back flow skips, parked shadows' events, and every Wormhole event
  type, ``typ >= EV_FIRST_WH``, through one entry);
- :func:`flow_start` and :func:`flow_finish`: a network flow starts or finishes;
- :func:`packet_at_port`: a packet is about to be queued at a port (tunnelled past a frozen one;
  a parked port moves back to now);
- :func:`ack_at_sender` and :func:`ack_held`: an ACK or NACK reached its sender;
- :func:`data_hop`, :func:`transmit_time` and :func:`int_stamp`: a packet starts crossing a port
  (flow skips' phantom data moves with it; phantom loads stretch its transmit time and reach the
  INT byte counter);
- :func:`is_ghost`: a packet of a shadow flow that finished with its leader.

Wormhole's state rows (:data:`WH_DIMS`, :data:`WH_FIELDS`) reach the physics' field table
(:mod:`wormsim.netsim.packet.fields`) through here too.

Wormhole's modules import the physics, so the hooks reach them as attributes of the
:mod:`~wormsim.netsim.packet.wormhole` package (``_wh.events.dispatch``), resolved when numba
compiles the physics; the package imports a module on first use. Importing this module imports
no Wormhole kernel code, and the two layers never import each other in a cycle.
"""

from __future__ import annotations

from numba import njit

from wormsim.netsim.packet import wormhole as _wh
from wormsim.netsim.packet.wormhole.fields import WH_DIMS, WH_FIELDS

__all__ = [
    "WH_DIMS",
    "WH_FIELDS",
    "kernel_start",
    "heap_reserve",
    "drop_stale",
    "parked_only",
    "live_events",
    "wh_event",
    "flow_start",
    "flow_finish",
    "packet_at_port",
    "ack_at_sender",
    "ack_held",
    "data_hop",
    "transmit_time",
    "int_stamp",
    "is_ghost",
]


# ---- the event loop (engine.py) ---------------------------------------------------------------
@njit(cache=True, inline="always")
def kernel_start(S, P, now):
    """The kernel starts at ``now`` (after the DAG's roots and the monitor): Wormhole's sampler
    starts, with partitions to compute."""
    if P.wh_ps > 0:
        _wh.events.start(S, P, now)


@njit(cache=True, inline="always")
def heap_reserve(S, P):
    """Heap slots the event loop keeps free for Wormhole (0 in packet mode)."""
    if P.wh_ps > 0:
        return _wh.events.heap_room(S)
    return 0


@njit(cache=True, inline="always")
def drop_stale(S, P):
    """Pop the top of the heap if it is the landing of a rolled-back flow skip (which can no longer
    act); True if it did."""
    return P.wh_flow and _wh.events.drop_stale_landing(S)


@njit(cache=True, inline="always")
def parked_only(S, P, now):
    """Whether the top event, due at ``now``, and every later one were left behind by parked
    shadows that no longer exist (none can act: the run is over)."""
    return P.wh_ps > 0 and _wh.events.parked_only(S, now)


@njit(cache=True, inline="always")
def live_events(S):
    """Pending events that can still act: the heap's, less the landings of rolled-back flow skips
    (the heap's size in packet mode)."""
    return _wh.flowskip.live_events(S)


@njit(cache=True, inline="always")
def wh_event(S, P, typ, arg, now):
    """Handle Wormhole event ``typ`` (``>= EV_FIRST_WH``; only Wormhole runs have them); True
    when the memo bridge has work (the kernel then returns 3)."""
    return _wh.events.dispatch(S, P, typ, arg, now)


# ---- flows (dag_exec.py, host.py) -------------------------------------------------------------
@njit(cache=True, inline="always")
def flow_start(S, P, q, now):
    """Network flow ``q`` was released and starts sending."""
    if P.wh_ps > 0:
        _wh.wh.wh_on_start(S, P, q, now)


@njit(cache=True, inline="always")
def flow_finish(S, P, q, now):
    """Network flow ``q`` just finished (before its congestion control and its DAG node)."""
    if P.wh_ps > 0:
        _wh.wh.wh_on_finish(S, P, q, now)


# ---- packets (host.py, switch.py, core.py) ----------------------------------------------------
@njit(cache=True, inline="always")
def packet_at_port(S, P, port, p, now):
    """Packet ``p`` is about to be queued at ``port``: True if Wormhole took it (a control packet
    tunnelled past a skipped partition's frozen port)."""
    if P.wh_ps > 0:
        return _wh.events.packet_at_port(S, P, port, p, now)
    return False


@njit(cache=True, inline="always")
def ack_at_sender(S, P, q, seq, now):
    """An ACK or NACK up to ``seq`` reached unfinished QP ``q``'s sender (before ``qp_una`` moves):
    True if it is stale and is dropped."""
    if P.wh_ps > 0:
        return _wh.events.ack_at_sender(S, P, q, seq, now)
    return False


@njit(cache=True, inline="always")
def ack_held(S, P, p, now):
    """Control packet ``p`` reached its sender: True if Wormhole holds it (its QP's partition is
    skipped) until it is due."""
    return P.wh_data_only and _wh.tunnel.defer_if_skipped(S, P, p, now)


@njit(cache=True, inline="always")
def data_hop(S, P, p, now):
    """Packet ``p`` starts crossing its current hop."""
    if P.wh_flow:
        _wh.flowphantom.data_hop(S, P, p, now)


@njit(cache=True, inline="always")
def transmit_time(S, P, port, tx, now):
    """Serialization time ``tx`` (ps) on ``port``, stretched by phantom loads."""
    if P.wh_data_only or P.wh_flow:
        return _wh.phantom.phantom_tx(S, P, port, tx, now)
    return tx


@njit(cache=True, inline="always")
def int_stamp(S, P, port, now):
    """``port`` is about to stamp INT on a data packet: its byte counter first counts its phantom
    loads' bytes up to ``now``."""
    if P.wh_data_only or P.wh_flow:
        _wh.phantom.settle_int(S, P, port, now)


@njit(cache=True, inline="always")
def is_ghost(S, P, p):
    """Whether packet ``p`` belongs to a shadow QP that finished with its leader (it is dropped
    where it next arrives or leaves a queue)."""
    return P.wh_ps > 0 and _wh.shadow.is_ghost(S, p)
