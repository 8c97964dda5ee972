"""The packet kernel's counters and mutable scalars (``State.cnt``), one row each.

A row's slot in ``cnt`` is its position in :data:`COUNTERS`: a counter is added by adding a row
(and its ``C_*`` name in :mod:`~wormsim.netsim.packet.state`, which a test holds to this order),
never by typing a number. ``docs/reference/engine-fields.md`` shows the table (``python -m
wormsim.netsim.packet.counters --update docs/reference/engine-fields.md``).
"""

from __future__ import annotations

from wormsim.netsim.common.field_spec import DocBlock, Scalar, scalar_table

__all__ = ["COUNTERS", "N_COUNTERS", "TABLE", "DOC"]

Counter = Scalar  # a slot of ``State.cnt``: its ``C_*`` name, unit and meaning


# fmt: off
COUNTERS: tuple[Counter, ...] = (
    # the event loop and the packet pool
    Counter("C_HEAPN", "count", "events in the heap"),
    Counter("C_SEQ", "count", "the next event's sequence number (same-time order)"),
    Counter("C_FREE", "count", "free packets in the pool (the top of the free list)"),
    Counter("C_EVENTS", "count", "events processed"),
    Counter("C_DATA_SENT", "count", "data packets sent by NICs"),
    Counter("C_HOPS", "count", "data packets transmitted by switch ports"),
    Counter("C_DROPS", "count", "packets dropped at full buffers"),
    Counter("C_PFC", "count", "PFC pause frames received"),
    Counter("C_ECN", "count", "packets ECN-marked"),
    Counter("C_CNP", "count", "CNPs (ACKs carrying an ECN echo) acted on"),
    Counter("C_PEAK_PKTS", "count", "most packets in use at once"),
    Counter("C_INUSE", "count", "packets in use"),
    Counter("C_RNG", "code", "the state of the RED marking's random generator (xorshift64*)"),
    Counter("C_NODES_DONE", "count", "DAG nodes finished"),
    Counter("C_FLUID_GEN", "count", "generation of the pending NVLink fluid event (older ones "
            "are stale)"),
    Counter("C_MONQ", "count", "queue-monitor samples taken"),
    Counter("C_MONR", "count", "rate-monitor samples taken"),
    Counter("C_MONLOST", "count", "monitor samples that did not fit"),
    Counter("C_NOW", "ps", "simulated time of the event being handled"),
    Counter("C_FLUID_N", "count", "active NVLink flows (`fl_list`)"),
    Counter("C_FLUID_LAST", "ps", "when the NVLink fluid was last advanced"),
    Counter("C_NACKS", "count", "NACKs sent"),
    Counter("C_RESUMES", "count", "PFC resume frames received"),
    # Wormhole
    Counter("C_WH_DIRTY", "flag", "a flow started or finished: partitions to recompute"),
    Counter("C_WH_SKIPS", "count", "skips (fast-forwards and memo replays)"),
    Counter("C_WH_BACKS", "count", "skips cut short (skip-backs)"),
    Counter("C_WH_STEADY", "count", "steady entries"),
    Counter("C_WH_PARTS", "count", "partitions formed"),
    Counter("C_WH_BYTES", "bytes", "bytes credited by skips, replays and shadows"),
    Counter("C_WH_MEMO", "flag", "memo work is pending for the Python driver (lookups or "
            "inserts)"),
    Counter("C_WH_NACT", "count", "length of the active-QP list (`wh_act`)"),
    Counter("C_WH_NTP", "count", "length of the labelled-port list (`wh_tp`)"),
    Counter("C_WH_TUNNELS", "count", "control packets tunnelled past frozen ports"),
    Counter("C_WH_DEFERS", "count", "control packets held for skipped QPs"),
    Counter("C_WH_PARKED", "count", "shadow partitions parked behind a leader"),
    Counter("C_WH_RELEASED", "count", "packets of other flows taken off ports as they were "
            "parked"),
    Counter("C_WH_UNPARKED", "count", "shadow groups materialised"),
    Counter("C_WH_MIRRORED", "count", "shadow flows finished with their leader"),
    Counter("C_WH_HOLDS", "count", "flows held on a parked shadow"),
    Counter("C_WH_REMAPS", "count", "re-formed shadows kept parked behind their re-formed "
            "leader"),
    Counter("C_WH_LIVE", "count", "parked groups not yet materialised"),
    Counter("C_WH_ORPHANS", "count", "shadows materialised because their leader changed alone"),
    Counter("C_WH_EMPTIED", "count", "shadow groups whose flows all finished with their leaders"),
    Counter("C_WH_PORTS_BACK", "count", "parked ports moved back alone (used by a flow not of "
            "their group)"),
    Counter("C_CURSEQ", "count", "sequence number of the event being handled"),
    Counter("C_FS_PEND", "count", "flow-skip landings in the heap"),
    Counter("C_FS_LIVE", "count", "flows skipped now"),
    Counter("C_WH_MEMO_PAUSE", "count", "partitions still to form without a memo lookup (the "
            "bridge's governor)"),
    Counter("C_WH_SHADOW_BYTES", "bytes", "bytes credited to shadow flows"),
)
# fmt: on
"""Every slot of ``State.cnt``, in slot order."""

N_COUNTERS = len(COUNTERS)
"""Slots of ``State.cnt``."""


TABLE = scalar_table(COUNTERS, "name", slots=True)
DOC = DocBlock("<!-- counters:begin", "<!-- counters:end -->")
"""The counter table and its markers in ``docs/reference/engine-fields.md``."""


if __name__ == "__main__":  # print the table, or --update FILE
    DOC.cli(TABLE, None, "Print the kernel's counter table of docs/reference/engine-fields.md.")
