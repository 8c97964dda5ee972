"""The packet kernel's counters and mutable scalars (``State.cnt``), one row each.

A row's slot in ``cnt`` is its position in :data:`COUNTERS`: a counter is added by adding a row
(and its ``C_*`` slot name in the tuple below the table, which a test holds to this order),
never by typing a number. A row with a public name is published: the run's counters
(``SimResult.counters``, ``summary.json``) take it under that name (:func:`published`; the
``wormhole`` group only in Wormhole mode), and the run report shows those marked ``report`` in
its counter tables (:func:`reported`). No other module lists the counters' public names.
``docs/reference/engine-fields.md`` shows the table (``python -m
wormsim.netsim.packet.counters --update docs/reference/engine-fields.md``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

import numpy as np

from wormsim.netsim.common.field_spec import DocBlock, scalar_table

__all__ = [
    "Counter",
    "GROUPS",
    "COUNTERS",
    "N_COUNTERS",
    "published",
    "reported",
    "TABLE",
    "DOC",
]

GROUPS = ("engine", "network", "wormhole")
"""What a counter is about: the event loop and its pools (``engine``), what the fabric did
(``network``), Wormhole's mechanics (``wormhole``, published in Wormhole mode only)."""


class Counter(NamedTuple):
    """A slot of ``State.cnt``.

    Attributes
    ----------
    name : its ``C_*`` name in :mod:`~wormsim.netsim.packet.state`.
    unit : of :data:`wormsim.netsim.packet.fields.UNITS`.
    meaning : one line.
    group : one of :data:`GROUPS`.
    public : its key in the run's counters and ``summary.json`` (``None``: internal).
    report : the run report's counter tables show it.
    """

    name: str
    unit: str
    meaning: str
    group: str = "engine"
    public: str | None = None
    report: bool = False


_E, _N, _W = GROUPS

# fmt: off
COUNTERS: tuple[Counter, ...] = (
    # the event loop and the packet pool
    Counter("C_HEAPN", "count", "events in the heap"),
    Counter("C_SEQ", "count", "the next event's sequence number (same-time order)"),
    Counter("C_FREE", "count", "free packets in the pool (the top of the free list)"),
    Counter("C_EVENTS", "count", "events processed", _E, "events_processed", report=True),
    Counter("C_DATA_SENT", "count", "data packets sent by NICs",
            _N, "data_packets_sent", report=True),
    Counter("C_HOPS", "count", "data packets transmitted by switch ports", _N, "data_packet_hops"),
    Counter("C_DROPS", "count", "packets dropped at full buffers", _N, "drops", report=True),
    Counter("C_PFC", "count", "PFC pause frames received", _N, "pfc_pauses", report=True),
    Counter("C_ECN", "count", "packets ECN-marked", _N, "ecn_marks", report=True),
    Counter("C_CNP", "count", "CNPs (ACKs carrying an ECN echo) acted on", _N, "cnps", report=True),
    Counter("C_PEAK_PKTS", "count", "most packets in use at once", _E, "peak_packets", report=True),
    Counter("C_INUSE", "count", "packets in use"),
    Counter("C_RNG", "code", "the state of the RED marking's random generator (xorshift64*)"),
    Counter("C_NODES_DONE", "count", "DAG nodes finished", _E, "dag_nodes_done"),
    Counter("C_FLUID_GEN", "count", "generation of the pending NVLink fluid event (older ones "
            "are stale)"),
    Counter("C_MONQ", "count", "queue-monitor samples taken"),
    Counter("C_MONR", "count", "rate-monitor samples taken"),
    Counter("C_MONLOST", "count", "monitor samples that did not fit", _E, "monitor_samples_lost"),
    Counter("C_NOW", "ps", "simulated time of the event being handled", _E, "sim_end_ps"),
    Counter("C_FLUID_N", "count", "active NVLink flows (`fl_list`)"),
    Counter("C_FLUID_LAST", "ps", "when the NVLink fluid was last advanced"),
    Counter("C_NACKS", "count", "NACKs sent", _N, "nacks", report=True),
    Counter("C_RESUMES", "count", "PFC resume frames received", _N, "pfc_resumes"),
    # Wormhole
    Counter("C_WH_DIRTY", "flag", "a flow started or finished: partitions to recompute", _W),
    Counter("C_WH_SKIPS", "count", "skips (fast-forwards and memo replays)",
            _W, "skips", report=True),
    Counter("C_WH_BACKS", "count", "skips cut short (skip-backs)", _W, "skip_backs", report=True),
    Counter("C_WH_STEADY", "count", "steady entries", _W, "steady_entries", report=True),
    Counter("C_WH_PARTS", "count", "partitions formed", _W, "partitions_formed", report=True),
    Counter("C_WH_BYTES", "bytes", "bytes credited by skips, replays and shadows",
            _W, "bytes_skipped", report=True),
    Counter("C_WH_MEMO", "flag", "memo work is pending for the Python driver (lookups or "
            "inserts)", _W),
    Counter("C_WH_NACT", "count", "length of the active-QP list (`wh_act`)", _W),
    Counter("C_WH_NTP", "count", "length of the labelled-port list (`wh_tp`)", _W),
    Counter("C_WH_TUNNELS", "count", "control packets tunnelled past frozen ports",
            _W, "control_tunnelled"),
    Counter("C_WH_DEFERS", "count", "control packets held for skipped QPs", _W, "control_deferred"),
    Counter("C_WH_PARKED", "count", "shadow partitions parked behind a leader",
            _W, "parked", report=True),
    Counter("C_WH_RELEASED", "count", "packets of other flows taken off ports as they were "
            "parked", _W, "control_released"),
    Counter("C_WH_UNPARKED", "count", "shadow groups materialised", _W, "parked_released"),
    Counter("C_WH_MIRRORED", "count", "shadow flows finished with their leader",
            _W, "shadow_flows_mirrored", report=True),
    Counter("C_WH_HOLDS", "count", "flows held on a parked shadow", _W, "shadow_flows_held"),
    Counter("C_WH_REMAPS", "count", "re-formed shadows kept parked behind their re-formed "
            "leader", _W, "shadows_remapped"),
    Counter("C_WH_LIVE", "count", "parked groups not yet materialised", _W),
    Counter("C_WH_ORPHANS", "count", "shadows materialised because their leader changed alone",
            _W, "shadows_orphaned"),
    Counter("C_WH_EMPTIED", "count", "shadow groups whose flows all finished with their leaders",
            _W, "shadows_emptied"),
    Counter("C_WH_PORTS_BACK", "count", "parked ports moved back alone (used by a flow not of "
            "their group)", _W, "shadow_ports_moved_back"),
    Counter("C_CURSEQ", "count", "sequence number of the event being handled"),
    Counter("C_FS_PEND", "count", "flow-skip landings in the heap", _W),
    Counter("C_FS_LIVE", "count", "flows skipped now", _W),
    Counter("C_WH_MEMO_PAUSE", "count", "partitions still to form without a memo lookup (the "
            "bridge's governor)", _W),
    Counter("C_WH_SHADOW_BYTES", "bytes", "bytes credited to shadow flows", _W, "bytes_shadowed"),
    Counter("C_WH_IDLE", "flag", "the Wormhole sampler sleeps: no network flow is active "
            "(the next flow start wakes it)", _W),
)
# fmt: on
"""Every slot of ``State.cnt``, in slot order."""

N_COUNTERS = len(COUNTERS)
"""Slots of ``State.cnt``."""

# each row's slot name: its position in COUNTERS (a test holds the two together); the kernels
# import them from here or from ``state``
(
    C_HEAPN, C_SEQ, C_FREE, C_EVENTS, C_DATA_SENT, C_HOPS, C_DROPS, C_PFC, C_ECN, C_CNP,
    C_PEAK_PKTS, C_INUSE, C_RNG, C_NODES_DONE, C_FLUID_GEN, C_MONQ, C_MONR, C_MONLOST, C_NOW,
    C_FLUID_N, C_FLUID_LAST, C_NACKS, C_RESUMES,
    C_WH_DIRTY, C_WH_SKIPS, C_WH_BACKS, C_WH_STEADY, C_WH_PARTS, C_WH_BYTES, C_WH_MEMO,
    C_WH_NACT, C_WH_NTP, C_WH_TUNNELS, C_WH_DEFERS, C_WH_PARKED, C_WH_RELEASED, C_WH_UNPARKED,
    C_WH_MIRRORED, C_WH_HOLDS, C_WH_REMAPS, C_WH_LIVE, C_WH_ORPHANS, C_WH_EMPTIED,
    C_WH_PORTS_BACK, C_CURSEQ, C_FS_PEND, C_FS_LIVE, C_WH_MEMO_PAUSE, C_WH_SHADOW_BYTES,
    C_WH_IDLE,
) = range(N_COUNTERS)  # fmt: skip

SLOT_NAMES: tuple[str, ...] = tuple(r.name for r in COUNTERS)
"""The ``C_*`` names, in slot order."""
__all__ += ["SLOT_NAMES", *SLOT_NAMES]


def published(cnt: np.ndarray, groups: Collection[str]) -> dict[str, int]:
    """The public counters of ``groups`` in the kernel's counter array ``cnt``, by public name
    in table order."""
    return {
        r.public: int(cnt[i])
        for i, r in enumerate(COUNTERS)
        if r.public is not None and r.group in groups
    }


def reported(groups: Collection[str]) -> tuple[str, ...]:
    """The public names of the counters of ``groups`` the run report shows, in table order."""
    return tuple(
        r.public for r in COUNTERS if r.public is not None and r.report and r.group in groups
    )


TABLE = scalar_table(COUNTERS, "name", slots=True)
DOC = DocBlock("<!-- counters:begin", "<!-- counters:end -->")
"""The counter table and its markers in ``docs/reference/engine-fields.md``."""


if __name__ == "__main__":  # print the table, or --update FILE
    DOC.cli(TABLE, None, "Print the kernel's counter table of docs/reference/engine-fields.md.")
