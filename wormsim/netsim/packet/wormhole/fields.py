"""Wormhole's part of the kernel state: its dimensions, its fields and the codes they hold.

The physics' table (:mod:`wormsim.netsim.packet.fields`) appends these rows to its own, in this
order, to make a Wormhole run's state (``fields.STATE_TABLE``); on their own they are
``fields.WORMHOLE_TABLE``. Every Wormhole dimension has 0 entries in packet mode (``wh_qp`` is
0 there and the others derive from it), so a packet-mode state carries Wormhole's fields as empty
arrays: the physics never indexes them in packet mode (each hook of :mod:`.hooks` is guarded by
the Wormhole flag of ``P``).
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.common.field_spec import Dim, FieldSpec, Scalar, field_group
from wormsim.netsim.packet.wormhole.handlers import WH_HANDLERS

__all__ = [
    "WH_DIMS",
    "WH_FIELDS",
    "WH_PARAMS",
    "CC_STATE",
    "PART_TRANSIENT",
    "PART_STEADY",
    "PART_SKIPPED",
    "HOLD_FREE",
    "HOLD_WAITING",
    "HOLD_REMAPPED",
    "PHANTOM_OFF",
    "PHANTOM_ARMED",
    "PHANTOM_ON",
]

CC_STATE = 4
"""Values a memo entry keeps per flow of its congestion control's state at the end of the
transient (see :func:`~wormsim.netsim.packet.cc.save_cc`)."""

# a partition's state (``wh_state[label]``)
PART_TRANSIENT = 0  # formed: the detector samples it until it is steady
PART_STEADY = 1  # passed the steadiness test (a memo miss snapshots its transient then)
PART_SKIPPED = 2  # fast-forwarded, replayed or parked until ``wh_t1_ps``, or landed since
# a QP's hold on a parked shadow group (``wh_hold[q]``)
HOLD_FREE = 0  # not held
HOLD_WAITING = 1  # held: starts when its group is matched again or materialised
HOLD_REMAPPED = 2  # released onto the shadow with its leader flow: a member without packets yet
# a route hop's phantom data load of a flow-skipped QP (``fs_pon[route entry]``)
PHANTOM_OFF = 0
PHANTOM_ARMED = 1  # goes on as the flow's last packet before the skip passes the hop
PHANTOM_ON = 2

WH_DIMS = (
    Dim("wh_qp", "QP, in a Wormhole run (0 entries in packet mode)"),
    Dim(
        "wh_partition",
        "partition label: the partition's smallest QP id, in a Wormhole run (0 entries in packet"
        " mode)",
        extent=lambda s: s["wh_qp"],
    ),
    Dim(
        "wh_group",
        "parked shadow group: labelled by its shadow partition's label, in a Wormhole run (0"
        " entries in packet mode)",
        extent=lambda s: s["wh_qp"],
    ),
    Dim(
        "wh_owner",
        "event owner, in a Wormhole run: ports, then QPs (`n_ports + q`; 0 entries in packet mode)",
        extent=lambda s: s["port"] + s["wh_qp"] if s["wh_qp"] else 0,
    ),
    Dim(
        "wh_port",
        "port, in a Wormhole run (0 entries in packet mode)",
        extent=lambda s: s["port"] if s["wh_qp"] else 0,
    ),
    Dim(
        "wh_route_entry",
        "route entry, in a Wormhole run (0 entries in packet mode)",
        extent=lambda s: s["route_entry"] if s["wh_qp"] else 0,
    ),
    Dim("window", "sample of the steady detector's window (`P.wh_window`)"),
    Dim(
        "cc_var",
        "congestion-control variable a memo entry keeps: the sending rate (bit/s), then DCQCN's"
        " alpha, target rate, stage; HPCC's U, increase stage; TIMELY's increases in a row, RTT"
        f" difference, last RTT; DCTCP's alpha ({CC_STATE})",
        fixed=CC_STATE,
    ),
)
"""The dimensions Wormhole's arrays are indexed by (besides the physics' base extents)."""

i8, i64, f8 = np.int8, np.int64, np.float64
B = None  # init: built by ``packet_sim.build_state`` from the scenario
_group = field_group

# fmt: off
WH_FIELDS: list[FieldSpec] = [
    *_group("Wormhole (`wormhole/wh.py`, `skip.py`, `tunnel.py`, `shadow.py`)", (
        ("qp_credit", i64, "wh_qp", "bytes", 0, "bytes credited by skips and replays"),
        ("wh_lab", i64, "wh_qp", "id", -1, "its partition (-1 = not active)"),
        ("wh_last", i64, "wh_qp", "bytes", 0, "bytes acked at the last sample"),
        ("wh_ring_Bpps", f8, "wh_qp window", "bytes/ps", 0, "delivered-rate samples"),
        ("wh_n", i64, "wh_qp", "count", 0,
         "samples taken since its window reset (< 0: the next only sets the baseline)"),
        ("wh_rtt_ps", i64, "wh_qp", "ps", B, "base RTT"),
        ("wh_cred", i64, "wh_qp", "bytes", 0, "bytes credited by the current skip"),
        ("wh_rate_Bpps", f8, "wh_qp", "bytes/ps", 0, "rate of the current skip (or replay)"),
        ("wh_psize", i64, "wh_partition", "count", 0, "member QPs"),
        ("wh_state", i8, "wh_partition", "code", 0,
         "`PART_TRANSIENT`, `PART_STEADY` or `PART_SKIPPED` (or landed since)"),
        ("wh_t0_ps", i64, "wh_partition", "ps", 0, "skip start (shadow: its leader's formation)"),
        ("wh_t1_ps", i64, "wh_partition", "ps", 0, "skip end"),
        ("wh_tform_ps", i64, "wh_partition", "ps", 0, "formation time"),
        ("wh_pport", i64, "wh_port", "id", -1, "the partition using it (-1 = none)"),
        ("ph_rate_bps", f8, "wh_port", "bit/s", 0, "phantom ACK load of skipped partitions"),
        ("ph_ack_ps", i64, "wh_port", "ps", 0, "INT counter holds its phantom ACK bytes up to"),
        ("wh_phq_bps", f8, "wh_qp", "bit/s", 0, "phantom ACK load it puts on its ACK route"),
        ("wh_phend_ps", i64, "wh_partition", "ps", -1, "landing of its phantom load (-1 = none)"),
        ("wh_tack_ps", i64, "wh_qp", "ps", 0, "time of its last ACK that advanced `qp_una`"),
        ("wh_tlast_ps", i64, "wh_qp", "ps", 0, "`wh_tack_ps` at the last sample"),
        ("wh_una0", i64, "wh_qp", "bytes", 0, "bytes acked when its partition formed"),
        ("wh_r0_bps", f8, "wh_qp", "bit/s", 0, "sending rate at formation (the FCG's weight)"),
        ("wh_sizef", i64, "wh_qp", "bytes", 0, "memo: bytes sent in the transient (`Size_f`)"),
        ("wh_rend_Bpps", f8, "wh_qp", "bytes/ps", 0, "memo: steady rate the transient ended at"),
        ("wh_memo", i8, "wh_partition", "code", 0, "memo status (`skip.MEMO_*`)"),
        ("wh_tconv_ps", i64, "wh_partition", "ps", 0, "memo: transient length (`T_conv`)"),
        ("wh_act", i64, "wh_qp", "id", 0, "active QPs (the first `cnt[C_WH_NACT]`)"),
        ("wh_par", i64, "wh_qp", "id", 0, "partition pass: union-find parent"),
        ("wh_size", i64, "wh_partition", "count", 0, "partition pass: members of the component"),
        ("wh_flag", i8, "wh_partition", "code", 0,
         "scratch: partition pass change code; sampler: every member steady (2: and one "
         "after its patience)"),
        ("wh_pown", i64, "wh_port", "id", -1, "partition pass: first active QP on it"),
        ("wh_tp", i64, "wh_port", "id", 0,
         "ports the last pass labelled (the first `cnt[C_WH_NTP]`)"),
        ("wh_cring_bps", f8, "wh_qp window", "bit/s", 0, "CC sending-rate samples"),
        ("wh_lead", i64, "wh_partition", "id", -1, "shadow: the partition it mirrors"),
        ("wh_mapq", i64, "wh_qp", "id", -1, "shadow QP: the leader QP it mirrors"),
        ("wh_lu0", i64, "wh_qp", "bytes", 0, "shadow QP: its leader QP's progress when mapped"),
        ("wh_mhead", i64, "wh_qp", "id", -1, "leader QP: first shadow QP mirroring it"),
        ("wh_mnext", i64, "wh_qp", "id", -1, "shadow QP: next one mirroring the same leader QP"),
        ("wh_pgrp", i64, "wh_port", "id", -1, "its parked group (-1 = none)"),
        ("wh_qgrp", i64, "wh_qp", "id", -1, "its parked group (-1 = none)"),
        ("wh_gnext", i64, "wh_qp", "id", -1, "parked group member: the next QP of its group"),
        ("wh_gprev", i64, "wh_qp", "id", -1, "parked group member: the previous QP of its group"),
        ("wh_vcred", i64, "wh_qp", "bytes", 0, "shadow QP: progress carried from earlier leaders"),
        ("wh_hold", i8, "wh_qp", "code", 0,
         "`HOLD_FREE`, `HOLD_WAITING` (held on a shadow) or `HOLD_REMAPPED`"),
        ("wh_ghost", i8, "wh_qp", "flag", 0,
         "shadow QP finished with its leader: its packets left in the fabric are dropped"),
        ("wh_gt0_ps", i64, "wh_group", "ps", -1, "when it was parked (-1 = not parked)"),
        ("wh_glive", i64, "wh_group", "count", 0, "its unfinished QPs"),
        ("wh_ghead", i64, "wh_group", "id", -1, "its first member QP (-1 = none)"),
        ("wh_mask", np.bool_, "wh_owner", "flag", 0,
         "scratch: the owners a shift moves (all false between shifts)"),
        ("wh_ccs", f8, "wh_qp cc_var", "mixed", 0,
         "memo: its congestion control's state at steady entry (see `cc_var`)"),
        ("wh_pause_ps", i64, "wh_port", "ps", -1,
         "when a PFC pause last reached it (-1 = never)"),
    )),
    *_group("Wormhole flow skips (`wormhole/flowskip.py`)", (
        ("fs_t0_ps", i64, "wh_qp", "ps", -1, "start of its flow skip (-1 = not skipped)"),
        ("fs_t1_ps", i64, "wh_qp", "ps", -1, "end of its flow skip (-1 = not skipped)"),
        ("fs_gen", i64, "wh_qp", "count", 0, "its flow skips so far (tells stale landings)"),
        ("fs_last", i64, "wh_qp", "bytes", 0,
         "end of its last data sent before its skip: its phantom starts behind it"),
        ("fs_first", i64, "wh_qp", "bytes", -1,
         "first byte it sent after its skip: its phantom ends ahead of it (-1 = none)"),
        ("fs_data_bps", f8, "wh_qp", "bit/s", 0, "the phantom data load it puts on a port"),
        ("fs_seen", i64, "wh_route_entry", "bytes", 0,
         "end of the furthest data of its route's flow that crossed this hop"),
        ("fs_pon", i8, "wh_route_entry", "code", 0,
         "its flow's phantom data load here: `PHANTOM_OFF`, `PHANTOM_ARMED` or `PHANTOM_ON`"),
        ("fs_nport", i64, "wh_port", "count", 0, "skipped flows whose data route crosses it"),
        ("ph_data_bps", f8, "wh_port", "bit/s", 0, "phantom data load of skipped flows"),
        ("ph_data_ps", i64, "wh_port", "ps", 0, "INT counter holds its phantom bytes up to"),
        ("fs_mark", np.bool_, "wh_port", "flag", 0,
         "scratch: ports whose skipped flows roll back (all false between roll-backs; not"
         " `wh_mask`, which a roll-back's own shift reads)"),
    )),
]
# fmt: on
"""Wormhole's fields, in the order of a Wormhole run's state (after the physics')."""


Param = Scalar  # one of Wormhole's scalars: its name, unit and meaning

# fmt: off
WH_PARAMS: tuple[Param, ...] = (
    Param("wh_ps", "ps", "Wormhole sampler period (0 = packet mode)"),
    *(Param(f"wh_fn_{n}", "address", f"Wormhole's `{h.module}.{h.function}` (`handlers`)")
      for n, h in WH_HANDLERS.items()),
    Param("wh_ff", "flag", "Wormhole fast-forwards steady partitions"),
    Param("wh_window", "count", "samples in the steadiness window"),
    Param("wh_theta", "ratio", "steadiness threshold (`theta`)"),
    Param("wh_blocks", "count", "blocks of the block-mean test (0 = range test)"),
    Param("wh_patience", "count", "samples a partition may take to reach fair shares (0 = no "
          "gate)"),
    Param("wh_osc_trend", "ratio", "largest trend of an oscillating partition (`oscillation_max_"
          "trend`)"),
    Param("wh_min_skip_ps", "ps", "shortest skip worth taking"),
    Param("wh_span_ps", "ps", "the window's span"),
    Param("wh_memo_on", "flag", "memo lookups and inserts"),
    Param("wh_margin_rtts", "count", "base RTTs of a flow's tail left to packets (`tail_rtts`)"),
    Param("wh_margin_span", "count", "window spans of a flow's tail left to packets "
          "(`tail_windows`)"),
    Param("wh_signal", "code", "steadiness signal: 0 delivered rate, 1 CC rate, 2 both"),
    Param("wh_gap", "ratio", "largest gap between delivered and CC rate (`max_rate_gap`)"),
    Param("wh_data_only", "flag", "partitions over data ports only (phantom ACK loads)"),
    Param("wh_partial", "flag", "memo entries may be replayed in part"),
    Param("wh_trend", "ratio", "largest rate trend over the window (`max_trend`)"),
    Param("wh_flow", "flag", "skips by flow (`skip_unit: flow`)"),
)
# fmt: on
"""Wormhole's scalars, in their order: a Wormhole run's parameters (``state.WhParams``) are the
physics' (``fields.PARAMS``) followed by these; a packet-mode run's have none of them."""
