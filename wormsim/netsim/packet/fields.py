"""The packet engine's state, described once: every array of ``State`` with its dtype, dimensions,
unit and meaning.

:data:`STATE_TABLE` is the one list of the kernel state's fields. Everything else derives from
it: ``state.STATE_FIELDS`` (the order of a Wormhole state's fields; a packet-mode state has the
physics' alone), the mechanical allocation in ``packet/run.build_state`` and
``state.alloc_pool``, which fields ``state.grow_pool`` and ``state.grow_heap`` grow (those along
``packet`` and ``heap``), the check that ``build_state`` produced every field at its declared
dtype and shape, and the field reference in ``docs/reference/engine-fields.md`` (``python -m
wormsim.netsim.packet.fields`` prints it).

It is two tables in one: the physics' fields (:data:`PHYSICS_TABLE`, the rows below) and
Wormhole's (:data:`WORMHOLE_TABLE`, the rows of :mod:`wormsim.netsim.packet.wormhole.fields`,
which come through the hooks module, the one Wormhole module the physics imports). Wormhole's
dimensions all have 0 entries in packet mode, so a packet-mode state carries its fields as empty
arrays.

Conventions
-----------
* **Rates carry their unit in the name.** The kernels use two rate units: ``_bps`` is bit/s (the
  units of ns-3 and of the configuration: line rates, CC rates, phantom loads) and ``_Bpps`` is
  bytes per picosecond (Wormhole's delivered-rate estimates, 1 bytes/ps = 8 Tbit/s, so bytes =
  rate × ps needs no conversion). Every field in bit/s ends in ``_bps`` and every field in
  bytes/ps in ``_Bpps``, and no other field does
  (:class:`~wormsim.netsim.common.field_spec.FieldTable`
  refuses a table that breaks this).
* **Times carry their unit in the name**, as rates do: every field in ps ends in ``_ps``, every
  field in ns (or the INT's wrapping ns) in ``_ns``, and no other field does (:data:`SUFFIXES`;
  ``wormsim.units`` names the factors between them).
* ``init`` is the value an array starts at; ``None`` means ``build_state`` computes it from the
  scenario (see the table's ``init`` column in the source).
* An ``id`` is an index along the dimension its meaning names (-1 = none); an ``index`` is a
  position in another field's array.

To add a field: add a row here, or to Wormhole's table for Wormhole's state (the kernels then
see it as ``S.name``); if its ``init`` is ``None``, compute it in ``packet_sim.build_state``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from wormsim.netsim.cc_registry import HOOKS
from wormsim.netsim.cc_registry import SETTINGS as CC_SETTINGS
from wormsim.netsim.cc_registry import STATE as CC_STATE_ROWS
from wormsim.netsim.common.dag_runtime import DAG_RUNTIME_DIMS, DAG_RUNTIME_FIELDS
from wormsim.netsim.common.field_spec import (
    COMMON_UNITS,
    RATE_SUFFIXES,
    UNIT_SUFFIXES,
    Dim,
    DocBlock,
    FieldSpec,
    FieldTable,
    Scalar,
    field_group,
    scalar_table,
)
from wormsim.netsim.packet.counters import N_COUNTERS
from wormsim.netsim.packet.handlers import HANDLERS
from wormsim.netsim.packet.port_outputs import own_fields
from wormsim.netsim.packet.wormhole.hooks import WH_DIMS, WH_FIELDS, WH_PARAMS

__all__ = [
    "STATE_TABLE",
    "STATE_DIMS",
    "PHYSICS_TABLE",
    "PHYSICS_DIMS",
    "PHYSICS_FIELDS",
    "WORMHOLE_TABLE",
    "UNITS",
    "RATE_SUFFIXES",
    "SUFFIXES",
    "MAXHOP",
    "N_COUNTERS",
    "DOC",
    "PARAMS",
    "WH_PARAMS",
    "PARAM_SUFFIXES",
    "PARAM_TABLE",
    "PARAM_DOC",
]

MAXHOP = 5
"""INT records a packet carries (hops of the longest route HPCC sees)."""

UNITS = {
    **COMMON_UNITS,
    "ns": "nanoseconds (ns-3's resolution: packet timestamps and RTTs)",
    "ns mod 2²⁴": "INT timestamp: ns, wrapping at 24 bits",
    "bytes": "bytes (sizes, sequence numbers, queues, buffers)",
    "128·int_multi B": "HPCC INT tx-byte counter: 128 × `int_multi` bytes, wrapping at 20 bits",
    "80·int_multi B": "HPCC INT queue length: units of 80 × `int_multi` bytes (17 bits)",
    "count": "a number of things (events, packets, stages, generations)",
    "index": "a position in another field's array",
    "address": "a compiled function's machine-code address",
    "ratio": "dimensionless",
    "probability": "in [0, 1]",
}
"""The units of the state's values."""

SUFFIXES = {**UNIT_SUFFIXES, "ns mod 2²⁴": "_ns"}
"""Unit -> the suffix of every field in it, and only those: rates and times."""

PHYSICS_DIMS = (
    Dim("counter", f"`C_*` counter slot ({N_COUNTERS})", fixed=N_COUNTERS),
    Dim("heap", "event heap slot (8192 at the start, doubled by `grow_heap`)"),
    Dim("packet", "packet pool slot = packet id (4096 at the start, doubled by `grow_pool`)"),
    Dim("hop", f"INT record of one hop of a route (`MAXHOP` = {MAXHOP})", fixed=MAXHOP),
    Dim("port", "directed port: the egress of `p_node` toward `p_peer` (`topo.n_ports`)"),
    Dim("node", "node: hosts and switches (`topo.n_nodes`)"),
    Dim("qp", "QP: a DAG flow that crosses the fabric, numbered in DAG order"),
    Dim(
        "nic_slot",
        "slot of the NICs' QP lists (`nic_off[port] + i`): one per QP, at least 1",
        extent=lambda s: max(s["qp"], 1),
    ),
    *DAG_RUNTIME_DIMS,
    Dim(
        "fluid_slot",
        "slot of the active NVLink fluid list: one per DAG node, at least 1",
        extent=lambda s: max(s["dag_node"], 1),
    ),
    Dim(
        "route_offset",
        "route boundary: route 2q is QP q's data route, 2q+1 its ACK route (2 × QPs + 1)",
        extent=lambda s: 2 * s["qp"] + 1,
    ),
    Dim("route_entry", "entry of the concatenated routes: one port of one route"),
    Dim("monitored_port", "port sampled by the queue monitor (0 without monitors)"),
    Dim("sample", "monitor sample slot (`Monitors.capacity`; 1 without monitors)"),
)
"""The dimensions the physics' arrays are indexed by."""

i8, i32, i64, f8 = np.int8, np.int32, np.int64, np.float64
B = None  # init: built by ``packet_sim.build_state`` from the scenario
_DAG = {f.name: f for f in DAG_RUNTIME_FIELDS}


_group = field_group  # rows ``(name, dtype, "dim dim", unit, init, meaning)`` of one docs group


# fmt: off
PHYSICS_FIELDS: list[FieldSpec] = [
    *_group("counters", (
        ("cnt", i64, "counter", "mixed", 0,
         "counters and mutable scalars at the `C_*` indices: counts, `C_NOW` ps, `C_RNG` the "
         "xorshift64* state"),
    )),
    *_group("event heap (`heap.py`)", (
        ("ht_ps", i64, "heap", "ps", 0, "event time"),
        ("hs", i64, "heap", "count", 0,
         "sequence number, drawn when scheduled: equal times pop in this order"),
        ("he", i64, "heap", "code", 0, "event code `type | arg << 8` (`EV_*` types)"),
        ("ho", i32, "heap", "id", 0,
         "owner: port, `n_ports + qp` (DCQCN timers) or -1 (global, never shifted)"),
    )),
    *_group("packet pool", (
        ("pk_type", i8, "packet", "code", 0, "`PK_DATA`, `PK_ACK`, `PK_NACK` or `PK_PFC`"),
        ("pk_flow", i32, "packet", "id", 0, "its QP"),
        ("pk_seq", i64, "packet", "bytes", 0,
         "data: offset of its payload in the flow; ACK/NACK: the next expected byte"),
        ("pk_size", i32, "packet", "bytes", 0, "size on the wire"),
        ("pk_payload", i32, "packet", "bytes", 0, "payload (data packets)"),
        ("pk_ecn", i8, "packet", "flag", 0, "ECN-marked (data)"),
        ("pk_cnp", i8, "packet", "flag", 0, "ACK: CNP (its data was marked); PFC: pause (1)"),
        ("pk_hop", i32, "packet", "count", 0, "hops taken: its position on its route"),
        ("pk_route", i64, "packet", "index", 0, "start of its route in `r_ports`"),
        ("pk_inport", i32, "packet", "id", 0,
         "port it entered its switch by (MMU accounting); tunnelled: port it crosses"),
        ("pk_next", i32, "packet", "id", -1, "next packet of its queue or link list"),
        ("pk_ts_ns", i64, "packet", "ns", 0, "send time of the data packet (kept by its ACK)"),
        ("pk_nhop", i32, "packet", "count", 0, "INT records stamped"),
        ("pk_it_ns", i64, "packet hop", "ns mod 2²⁴", 0, "INT: dequeue time per hop"),
        ("pk_ib", i64, "packet hop", "128·int_multi B", 0, "INT: port's tx-byte counter per hop"),
        ("pk_iq", i64, "packet hop", "80·int_multi B", 0, "INT: port's queue length per hop"),
        ("pk_ir_bps", i64, "packet hop", "bit/s", 0, "INT: port's line rate per hop"),
        ("pk_at_ps", i64, "packet", "ps", 0, "arrival time, while behind its link's first packet"),
        ("pk_as", i64, "packet", "count", 0, "its heap sequence number, drawn with `pk_at_ps`"),
        ("free_stack", i32, "packet", "id", B,
         "free packets: the first `cnt[C_FREE]` entries, the next one taken last"),
    )),
    *_group("ports", (
        ("p_node", i64, "port", "id", B, "node it leaves"),
        ("p_peer", i64, "port", "id", B, "node it transmits to"),
        ("p_rate_bps", i64, "port", "bit/s", B, "line rate"),
        ("p_delay_ps", i64, "port", "ps", B, "propagation delay of its link"),
        ("p_rev", i64, "port", "id", B, "the port of the opposite direction"),
        ("p_sw", i8, "port", "flag", B, "a switch port (else a host NIC)"),
        ("p_busy", i8, "port", "flag", 0, "NIC: serializing a packet"),
        ("p_free_ps", i64, "port", "ps", 0, "switch: when its wire is free"),
        ("p_free_seq", i64, "port", "count", 0,
         "switch: sequence number of the transmit-complete at `p_free_ps` (ns-3's event order)"),
        ("p_pend", i8, "port", "flag", 0, "switch: a tx-done event is pending"),
        ("lk_head", i64, "port", "id", -1, "first packet in flight on its link (in the heap)"),
        ("lk_tail", i64, "port", "id", -1, "last packet in flight on its link"),
        ("qh_head", i64, "port", "id", -1, "head of the high-priority queue (PFC, ACKs)"),
        ("qh_tail", i64, "port", "id", -1, "tail of the high-priority queue"),
        ("qh_bytes", i64, "port", "bytes", 0, "bytes in the high-priority queue"),
        ("ql_head", i64, "port", "id", -1, "head of the data queue"),
        ("ql_tail", i64, "port", "id", -1, "tail of the data queue"),
        ("ql_bytes", i64, "port", "bytes", 0, "bytes in the data queue"),
        ("paused", i8, "port", "flag", 0, "paused by PFC from its peer"),
        ("pfc_since_ps", i64, "port", "ps", -1, "when the pause in force began (-1 = not paused)"),
        ("pfc_paused_ps", i64, "port", "ps", 0, "time spent paused by PFC (ended pauses)"),
        ("pfc_rx", i64, "port", "count", 0, "PFC pause frames received from its peer"),
        ("ecn_marked", i64, "port", "count", 0, "data packets it marked CE at dequeue"),
        ("tx_bytes", i64, "port", "bytes", 0, "bytes transmitted (INT's tx counter)"),
        ("peak_bytes", i64, "port", "bytes", 0, "largest queued bytes, both queues"),
        ("ing_bytes", i64, "port", "bytes", 0,
         "as ingress: data bytes accounted to it (reserve and shared pool)"),
        ("hdrm_bytes", i64, "port", "bytes", 0, "as ingress: headroom bytes in use"),
        ("pfc_on", i8, "port", "flag", 0, "as ingress: a pause is in force upstream"),
        ("headroom", i64, "port", "bytes", B, "PFC headroom: 3 × rate × delay (switch ports)"),
        ("pfc_shift", i64, "port", "count", B,
         "right shift of the dynamic PFC threshold (3 at the NIC rate, less above)"),
        ("kmin", f8, "port", "bytes", B, "RED/ECN Kmin"),
        ("kmax", f8, "port", "bytes", B, "RED/ECN Kmax"),
        ("pmax", f8, "port", "probability", B, "RED/ECN marking probability at Kmax"),
        ("nic_off", i64, "port", "index", B, "NIC: start of its QP list in `nic_qps`"),
        ("nic_n", i64, "port", "count", 0, "NIC: QPs in its list"),
        ("nic_rr", i64, "port", "index", 0, "NIC: round-robin position (last QP served)"),
        ("nic_qps", i64, "nic_slot", "id", 0, "the NICs' QP lists, one after another"),
        ("nic_wake_ps", i64, "port", "ps", -1, "NIC: pending wake-up (-1 = none)"),
        ("nic_wake_g", i64, "port", "count", 0, "NIC: wake-up generation (stale events ignored)"),
    )),
    *_group("nodes", (
        ("is_sw", i8, "node", "flag", B, "a switch"),
        ("sw_shared", i64, "node", "bytes", 0, "switch: shared-pool bytes in use"),
        ("sw_fixed", i64, "node", "bytes", B, "switch: headroom + reserve of all its ports"),
        ("sw_used", i64, "node", "bytes", 0, "switch: buffer bytes in use (PFC off)"),
        ("host_server", i64, "node", "id", B, "the server of a host (NVLink domain; -1 = none)"),
    )),
    *_group("QPs", (
        ("qp_node", i64, "qp", "id", B, "its DAG node"),
        ("qp_src", i64, "qp", "id", B, "source host"),
        ("qp_dst", i64, "qp", "id", B, "destination host"),
        ("qp_nic", i64, "qp", "id", B, "its source NIC port"),
        ("qp_size", i64, "qp", "bytes", B, "bytes to deliver (less Wormhole's credits)"),
        ("qp_nxt", i64, "qp", "bytes", 0, "next byte to send"),
        ("qp_una", i64, "qp", "bytes", 0, "bytes acked"),
        ("qp_rate_bps", f8, "qp", "bit/s", 0, "sending rate (the CC's)"),
        ("qp_max_bps", f8, "qp", "bit/s", 0, "its NIC's line rate (set at start)"),
        ("qp_win", i64, "qp", "bytes", 0, "window (0 = none)"),
        ("qp_next_avail_ps", i64, "qp", "ps", 0, "pacing: when it may send next"),
        ("qp_last_size", i64, "qp", "bytes", 0, "size of the last packet it sent"),
        ("qp_start_ps", i64, "qp", "ps", -1, "start time (-1 = not started)"),
        ("qp_done", i8, "qp", "flag", 0, "finished (every byte acked)"),
        ("qp_rdata", i64, "qp", "index", B, "start of its data route in `r_ports`"),
        ("qp_rack", i64, "qp", "index", B, "start of its ACK route in `r_ports`"),
        ("rx_expected", i64, "qp", "bytes", 0, "receiver: next expected byte"),
        ("rx_milestone", i64, "qp", "bytes", 0, "receiver: next ACK milestone"),
        ("rx_nack_ps", i64, "qp", "ps", 0, "receiver: no new NACK for the same byte before"),
        ("rx_last_nack", i64, "qp", "bytes", 0, "receiver: expected byte of the last NACK"),
    )),
    *_group("congestion control", CC_STATE_ROWS),  # each one's rows: cc_registry
    # the DAG executor's arrays are dag_runtime's entries (shared with the flow engine)
    _DAG["g_kind"],
    *_group("DAG", (
        ("g_src", i64, "dag_node", "id", B, "flow: source rank (= host node)"),
        ("g_dst", i64, "dag_node", "id", B, "flow: destination rank (= host node)"),
    )),
    _DAG["g_rank"],
    *_group("DAG", (
        ("g_size", i64, "dag_node", "bytes", B, "flow size"),
    )),
    *(_DAG[n] for n in ("g_dur_ps", "g_rem", "g_coff", "g_cidx", "g_start_ps", "g_finish_ps")),
    *_group("DAG", (
        ("g_qp", i64, "dag_node", "id", B, "its QP (-1 = not a packet flow)"),
    )),
    *(_DAG[n] for n in ("rk_busy", "rk_head", "rk_tail", "g_cnext", "g_ready")),
    *_group("DAG", (
        ("fl_list", i64, "fluid_slot", "id", 0, "active NVLink flows (DAG nodes; `C_FLUID_N`)"),
        ("fl_rem", f8, "dag_node", "bytes", 0, "NVLink flow: bytes left"),
        ("fl_rate_bps", f8, "dag_node", "bit/s", 0, "NVLink flow: max-min rate"),
    )),
    *_group("routes", (
        ("r_off", i64, "route_offset", "index", B, "start of route k in `r_ports`"),
        ("r_ports", i64, "route_entry", "id", B,
         "the routes' egress ports, source NIC first"),
    )),
    *_group("monitors", (
        ("mq_ports", i64, "monitored_port", "id", B, "ports whose queues are sampled"),
        ("mq_t_ps", i64, "sample", "ps", 0, "queue sample: time"),
        ("mq_p", i64, "sample", "id", 0, "queue sample: port"),
        ("mq_b", i64, "sample", "bytes", 0, "queue sample: bytes in both queues"),
        ("mr_t_ps", i64, "sample", "ps", 0, "rate sample: time"),
        ("mr_f", i64, "sample", "id", 0, "rate sample: QP"),
        ("mr_r_bps", f8, "sample", "bit/s", 0,
         "rate sample: the rate its congestion control means to send at (`cc_rate`)"),
    )),
]
# fmt: on

PHYSICS_FIELDS += field_group("per-port outputs declared by their rows", own_fields())
"""A per-port output whose field only it uses declares the field in its row
(:mod:`~wormsim.netsim.packet.port_outputs`); none does today."""

PHYSICS_TABLE = FieldTable(PHYSICS_DIMS, PHYSICS_FIELDS, UNITS, SUFFIXES)
"""The physics' state, field by field."""

WORMHOLE_TABLE = FieldTable(WH_DIMS, WH_FIELDS, UNITS, SUFFIXES)
"""Wormhole's state, field by field (:mod:`~wormsim.netsim.packet.wormhole.fields`): every array
has 0 entries in packet mode."""

STATE_DIMS = (*PHYSICS_DIMS, *WH_DIMS)
"""The dimensions the state's arrays are indexed by."""

STATE_TABLE = FieldTable(STATE_DIMS, [*PHYSICS_FIELDS, *WH_FIELDS], UNITS, SUFFIXES)
"""The packet kernel's state, field by field, in the order of ``State``: the physics' fields,
then Wormhole's."""


DOC = DocBlock("<!-- state-fields:begin", "<!-- state-fields:end -->")
"""Markers of the generated reference in ``docs/reference/engine-fields.md`` (the begin line
may say more)."""


Param = Scalar  # one of the kernel's ``Params``: its name, unit (of :data:`UNITS`) and meaning


# fmt: off
PARAMS: tuple[Param, ...] = (
    Param("cc", "code", "congestion control: its `cc_registry` code (HPCC ns-3's `CC_MODE`)"),
    *(Param(f"cc_fn_{h}", "address", f"the run's congestion control's `{h}` hook (`cc_link`)")
      for h in HOOKS),
    *(Param(f"fn_{n}", "address", f"the event handler `{h.module}.{h.function}` (`handlers`)")
      for n, h in HANDLERS.items()),
    Param("int_stamp", "flag", "switches stamp INT on data packets (the control's registry row)"),
    Param("mtu", "bytes", "payload of a data packet"),
    Param("hdr_bytes", "bytes", "header bytes of a data frame besides INT"),
    Param("int_bytes", "bytes", "INT or timestamp header bytes of the congestion control"),
    Param("ack_bytes", "bytes", "an ACK, NACK or CNP frame"),
    Param("pfc_bytes", "bytes", "a PFC pause or resume frame"),
    Param("ack_interval", "bytes", "the receiver ACKs every this many bytes (`L2_ACK_INTERVAL`)"),
    Param("chunk", "bytes", "the receiver also ACKs at every chunk boundary (`L2_CHUNK_SIZE`)"),
    Param("nack_ps", "ps", "least time between two NACKs of one QP"),
    Param("win", "bytes", "window: the BDP of the longest path (0 = no window)"),
    Param("base_rtt_ns", "ns", "base RTT of the longest path"),
    Param("var_win", "flag", "the window scales with rate / line rate"),
    Param("rate_bound", "flag", "NICs pace a QP at its rate (else at line rate)"),
    Param("ack_hi", "flag", "NICs send ACKs ahead of data"),
    Param("sw_ack_hi", "flag", "switches queue ACKs ahead of data"),
    Param("ecn_on", "flag", "switches ECN-mark"),
    Param("pfc_on", "flag", "PFC on"),
    Param("buffer", "bytes", "a switch's shared buffer"),
    Param("reserve", "bytes", "per-port reserved buffer"),
    Param("resume_off", "bytes", "PFC resumes this far below the pause threshold"),
    Param("g", "ratio", "EWMA gain of DCQCN's and DCTCP's alpha"),
    Param("rai_bps", "bit/s", "additive increase (DCQCN, HPCC, TIMELY)"),
    Param("rhai_bps", "bit/s", "hyper additive increase (DCQCN, TIMELY)"),
    Param("min_rate_bps", "bit/s", "least sending rate"),
    *(Param(s.kernel, s.unit, s.meaning) for s in CC_SETTINGS),  # each one's: cc_registry
    Param("trunc_tx", "flag", "serialisation and pacing times truncated to whole ns (ns-3.17)"),
    Param("sample_ps", "ps", "monitor sampling period (0 = no monitors)"),
    Param("nvlink_rate_bps", "bit/s", "NVLink rate of a GPU"),
    Param("n_ports", "count", "directed ports of the topology"),
)
# fmt: on
"""The kernel's scalars (``state.Params``), in their order."""

PARAM_SUFFIXES = {"ps": "_ps", "ns": "_ns", "bit/s": "_bps"}
"""A parameter in one of these units, and only such a parameter, ends in its suffix."""


PARAM_TABLE = scalar_table((*PARAMS, *WH_PARAMS), "`P.` field")
PARAM_DOC = DocBlock("<!-- params:begin", "<!-- params:end -->")
"""The parameter table and its markers in ``docs/reference/engine-fields.md``."""


if __name__ == "__main__":  # print the references, or --update FILE
    parser = argparse.ArgumentParser(
        description="The state and parameter tables of docs/reference/engine-fields.md."
    )
    parser.add_argument("--update", metavar="FILE", type=Path, help="rewrite FILE's two blocks")
    args = parser.parse_args()
    if args.update is None:
        print(STATE_TABLE.markdown() + "\n" + PARAM_TABLE.markdown(), end="")
    else:
        text = DOC.replace(args.update.read_text(), STATE_TABLE)
        args.update.write_text(PARAM_DOC.replace(text, PARAM_TABLE))
