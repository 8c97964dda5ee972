"""The seam between the packet physics and Wormhole: the one Wormhole module the physics imports.

Each hook is a small function inlined into the physics code that calls it (an ``overload`` with
``inline="always"``, so the seam adds no call) and is chosen by the state's type: for a
packet-mode state (:data:`~wormsim.netsim.packet.state.PACKET_STATE`) it compiles to nothing, so
no Wormhole code is typed or compiled in a packet-mode run; for a Wormhole state it tests the
Wormhole flag of ``P`` that decides whether Wormhole acts there (``wh_ps > 0``: a Wormhole run;
``wh_data_only``: partitions over data ports, with tunnels and phantom ACK loads; ``wh_flow``:
flow skips) and only then calls into Wormhole. The hooks:

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

Wormhole's state rows and scalars (:data:`WH_DIMS`, :data:`WH_FIELDS`, :data:`WH_PARAMS`) reach
the physics' field table (:mod:`wormsim.netsim.packet.fields`) through here too.

Wormhole's modules import the physics, so the hooks reach them as attributes of the
:mod:`~wormsim.netsim.packet.wormhole` package (``_wh.events.dispatch``), resolved when numba
compiles the physics; the package imports a module on first use. Importing this module imports
no Wormhole kernel code, and the two layers never import each other in a cycle.
"""

from __future__ import annotations

from numba.core.extending import overload

from wormsim.netsim.packet import wormhole as _wh
from wormsim.netsim.packet.counters import C_HEAPN
from wormsim.netsim.packet.wormhole.fields import WH_DIMS, WH_FIELDS, WH_PARAMS

__all__ = [
    "WH_DIMS",
    "WH_FIELDS",
    "WH_PARAMS",
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


def _wormhole(S) -> bool:
    """Whether ``S`` (a numba type) is a Wormhole-mode state."""
    return bool(getattr(S, "wormhole", False))


def _hook(stub, inline: str = "always"):
    """Declare ``stub`` (a plain function documenting the hook) a hook: its overload follows."""
    return overload(stub, inline=inline)


# ---- the event loop (engine.py) ---------------------------------------------------------------
def kernel_start(S, P, now):
    """The kernel starts at ``now`` (after the DAG's roots and the monitor): Wormhole's sampler
    starts, with partitions to compute."""


@_hook(kernel_start)
def _kernel_start(S, P, now):
    if not _wormhole(S):
        return lambda S, P, now: None

    def impl(S, P, now):
        if P.wh_ps > 0:
            _wh.events.start(S, P, now)

    return impl


def heap_reserve(S, P):
    """Heap slots the event loop keeps free for Wormhole (0 in packet mode)."""


@_hook(heap_reserve)
def _heap_reserve(S, P):
    if not _wormhole(S):
        return lambda S, P: 0

    def impl(S, P):
        if P.wh_ps > 0:
            return _wh.events.heap_room(S)
        return 0

    return impl


def drop_stale(S, P):
    """Pop the top of the heap if it is the landing of a rolled-back flow skip (which can no longer
    act); True if it did."""


@_hook(drop_stale)
def _drop_stale(S, P):
    if not _wormhole(S):
        return lambda S, P: False

    def impl(S, P):
        if P.wh_flow:
            return _wh.events.drop_stale_landing(S)
        return False

    return impl


def parked_only(S, P, now):
    """Whether the top event, due at ``now``, and every later one were left behind by parked
    shadows that no longer exist (none can act: the run is over)."""


@_hook(parked_only)
def _parked_only(S, P, now):
    if not _wormhole(S):
        return lambda S, P, now: False

    def impl(S, P, now):
        if P.wh_ps > 0:
            return _wh.events.parked_only(S, now)
        return False

    return impl


def live_events(S):
    """Pending events that can still act: the heap's, less the landings of rolled-back flow skips
    (the heap's size in packet mode)."""


@_hook(live_events)
def _live_events(S):
    if not _wormhole(S):
        return lambda S: S.cnt[C_HEAPN]
    return lambda S: _wh.flowskip.live_events(S)


def wh_event(S, P, typ, arg, now):
    """Handle Wormhole event ``typ`` (``>= EV_FIRST_WH``; only Wormhole runs have them); True
    when the memo bridge has work (the kernel then returns 3)."""


@_hook(wh_event)
def _wh_event(S, P, typ, arg, now):
    if not _wormhole(S):
        return lambda S, P, typ, arg, now: False
    return lambda S, P, typ, arg, now: _wh.events.dispatch(S, P, typ, arg, now)


# ---- flows (dag_exec.py, host.py) -------------------------------------------------------------
def flow_start(S, P, q, now):
    """Network flow ``q`` was released and starts sending."""


@_hook(flow_start)
def _flow_start(S, P, q, now):
    if not _wormhole(S):
        return lambda S, P, q, now: None

    def impl(S, P, q, now):
        if P.wh_ps > 0:
            _wh.calls.wh_on_start(S, P, q, now)

    return impl


def flow_finish(S, P, q, now):
    """Network flow ``q`` just finished (before its congestion control and its DAG node)."""


@_hook(flow_finish)
def _flow_finish(S, P, q, now):
    if not _wormhole(S):
        return lambda S, P, q, now: None

    def impl(S, P, q, now):
        if P.wh_ps > 0:
            _wh.calls.wh_on_finish(S, P, q, now)

    return impl


# ---- packets (host.py, switch.py, core.py) ----------------------------------------------------
def port_paused(S, P, port, now):
    """A PFC pause frame reached ``port`` (its sender stops sending data)."""


@_hook(port_paused)
def _port_paused(S, P, port, now):
    if not _wormhole(S):
        return lambda S, P, port, now: None

    def impl(S, P, port, now):
        if P.wh_ps > 0:
            _wh.wh.wh_on_pause(S, P, port, now)

    return impl


def packet_at_port(S, P, port, p, now):
    """Packet ``p`` is about to be queued at ``port``: True if Wormhole took it (a control packet
    tunnelled past a skipped partition's frozen port)."""


@_hook(packet_at_port)
def _packet_at_port(S, P, port, p, now):
    if not _wormhole(S):
        return lambda S, P, port, p, now: False

    def impl(S, P, port, p, now):
        if P.wh_ps > 0:
            return _wh.events.packet_at_port(S, P, port, p, now)
        return False

    return impl


def ack_at_sender(S, P, q, seq, now):
    """An ACK or NACK up to ``seq`` reached unfinished QP ``q``'s sender (before ``qp_una`` moves):
    True if it is stale and is dropped."""


@_hook(ack_at_sender)
def _ack_at_sender(S, P, q, seq, now):
    if not _wormhole(S):
        return lambda S, P, q, seq, now: False

    def impl(S, P, q, seq, now):
        if P.wh_ps > 0:
            return _wh.events.ack_at_sender(S, P, q, seq, now)
        return False

    return impl


def ack_held(S, P, p, now):
    """Control packet ``p`` reached its sender: True if Wormhole holds it (its QP's partition is
    skipped) until it is due."""


@_hook(ack_held)
def _ack_held(S, P, p, now):
    if not _wormhole(S):
        return lambda S, P, p, now: False

    def impl(S, P, p, now):
        if P.wh_data_only:
            return _wh.tunnel.defer_if_skipped(S, P, p, now)
        return False

    return impl


def data_hop(S, P, p, now):
    """Packet ``p`` starts crossing its current hop."""


@_hook(data_hop)
def _data_hop(S, P, p, now):
    if not _wormhole(S):
        return lambda S, P, p, now: None

    def impl(S, P, p, now):
        if P.wh_flow:
            _wh.flowphantom.data_hop(S, P, p, now)

    return impl


def transmit_time(S, P, port, tx, now):
    """Serialization time ``tx`` (ps) on ``port``, stretched by phantom loads."""


@_hook(transmit_time)
def _transmit_time(S, P, port, tx, now):
    if not _wormhole(S):
        return lambda S, P, port, tx, now: tx

    def impl(S, P, port, tx, now):
        if P.wh_data_only or P.wh_flow:
            return _wh.phantom.phantom_tx(S, P, port, tx, now)
        return tx

    return impl


def int_stamp(S, P, port, now):
    """``port`` is about to stamp INT on a data packet: its byte counter first counts its phantom
    loads' bytes up to ``now``."""


@_hook(int_stamp)
def _int_stamp(S, P, port, now):
    if not _wormhole(S):
        return lambda S, P, port, now: None

    def impl(S, P, port, now):
        if P.wh_data_only or P.wh_flow:
            _wh.phantom.settle_int(S, P, port, now)

    return impl


def is_ghost(S, P, p):
    """Whether packet ``p`` belongs to a shadow QP that finished with its leader (it is dropped
    where it next arrives or leaves a queue)."""


# not inlined by numba (LLVM still inlines it): numba's typed inlining of this one, called where
# a packet arrives, trips its own pedantic SSA check (NumbaIRAssumptionWarning) at every compile
@_hook(is_ghost, inline="never")
def _is_ghost(S, P, p):
    if not _wormhole(S):
        return lambda S, P, p: False

    def impl(S, P, p):
        if P.wh_ps > 0:
            return _wh.shadow.is_ghost(S, p)
        return False

    return impl
