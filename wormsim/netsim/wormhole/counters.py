"""Wormhole mode of the packet engine: fast-forwarding steady partitions (paper §6–7).

Enable with ``run_packet(..., wormhole=WormholeSpec(...))``; ``None`` is plain packet mode (the
Wormhole code is never entered). The mechanics run inside the numba event loop
(:mod:`wormsim.netsim.packet.wormhole.wh`); this module holds the decisions and the Python side
(counters). The measurements behind each decision are in ``docs/wormhole.md``.

Decisions
---------
Partition unit
    The directed ports of a network flow's data and ACK routes (``partition_ports=
    "data_and_ack"``, the default), or those its data uses (``"data"``, as the paper's
    partitions; ``"auto"``: data, but data and ACK under TIMELY). Partitions are the connected
    components of the active network flows over shared ports, recomputed by a union-find over
    the active flows' routes at the first sampler tick after a network flow starts or finishes,
    in O(sum of the active routes). A partition is labelled by its smallest QP id; one whose
    member set is unchanged keeps its label and state, a changed one resets the windows of all
    its members. NVLink flows are neither partitioned nor fast-forwarded; PFC frames are not
    attributed to partitions. With data ports, data-parallel rings split into channel pairs whose
    steps recur (so memo hits and shadows apply); what the ACK coupling does physically is kept
    by :mod:`wormsim.netsim.packet.wormhole.tunnel` (control packets pass a skipped partition's
    frozen port at its queue's drain time, skipped and shadowed flows keep loading their ACK
    routes), and a flow's FCG vertex carries its base RTT and the ACK streams on its data ports.

Steady detection (paper §6)
    Every ``sample_period_ns`` two signals are sampled per active network flow: its delivered
    rate (bytes acked between the last ACKs of two periods over the time between those ACKs) and
    its congestion control's rate variable. With ``signal="both"`` (default) a flow is steady
    when, over the last ``window`` samples, (max − min) / mean < ``theta`` for both, and, for
    rate-based CCs (DCQCN, TIMELY, DCTCP), when its sending rate (min of CC rate and its NIC's
    round-robin share) matches its delivered rate within ``max_rate_gap``: the delivered rate
    alone is flat while a queue builds, the CC rate alone is blind to what a window lets through.
    A partition is steady when all its flows are. For DCQCN the window spans twice its longest
    timer, since rate-increase steps look flat over short windows. Windows reset whenever the
    partition changes.

Memoization (paper §4–5)
    When a partition forms, the kernel stops and :class:`~wormsim.netsim.wormhole.bridge.MemoBridge`
    builds its FCG (vertex weight: the flow's CC rate at formation, bucketed by
    :data:`~wormsim.memo.DEFAULT_QUANTIZER`, with its base RTT's bucket and, for data ports, the
    ACK streams on its data ports; edges: shared ports) and looks it up under
    :func:`~wormsim.netsim.wormhole.bridge.memo_namespace` (CC and its parameters, link rates and
    delays, buffer, MTU, ECN, PFC, detector, engine model).
    *Miss*: at steady entry the kernel snapshots ``T_conv`` (formation to steady entry, the time
    a hit saves), ``Size_f`` (bytes acked since formation), the window-mean end rates and each
    sender's congestion-control state (:func:`~wormsim.netsim.packet.cc.save_cc`), and the
    bridge stores them. *Hit*: if every flow has more than ``Size_f`` + its tail margin left, the
    partition jumps over the transient and the steady run after it in one shift (ΔT = T_conv +
    min_f (remaining_f − Size_f − margin_f) / R_f), each flow is credited Size_f + R_f·(ΔT −
    T_conv), and the senders take the stored state at the stored sending rate (a windowed
    sender's rate variable sits above what its window delivers; DCQCN restarts its timers, as
    after a cut, since it raises its rate only on its timer). Queues, windows and in-flight
    packets stay as they were. A hit that does not fit is *rejected* and the partition is
    simulated. Skip-back during a replay interpolates the credit (Size_f · elapsed / T_conv).
    ``memo_replay_dcqcn`` off makes DCQCN hits count as ``memo_rejected``. Repeated lookups of
    one run are answered from a cache keyed by the labelled FCG.

Fast-forward (paper §7)
    When a partition becomes steady and has not been skipped since it formed: ΔT = min over its
    flows of (remaining_f − margin_f) / R̂_f, R̂_f the mean delivered rate of the newest half of
    its window (``steady.newest_half_mean``) and margin_f = R̂_f ·
    max(``tail_rtts`` × base RTT_f, ``tail_windows`` × window span), so the tail runs packet by
    packet; ΔT is rounded down to whole ns and skipped only if ΔT ≥ ``min_skip_periods`` sample
    periods. Each flow gets credit_f = ⌊R̂_f·ΔT / payload⌋ · payload bytes (at least one packet
    stays unsent): ``qp_size`` shrinks by the credit and ``qp_credit`` records it, so the flow
    finishes credit_f bytes earlier in its own sequence space; packets in flight keep their
    numbers. The partition's pending events (its ports' and QPs' timers), switch busy times,
    link FIFOs, NIC wake-ups, pacing times, NACK timers and the timestamps its packets and INT
    histories carry are shifted by ΔT; its buffered packets stay (frozen occupancy). The global
    clock is not jumped, and the sampler ignores a skipped partition.

Skip-back (real-time interrupt)
    When the DAG releases a network flow whose routes touch a partition that is still skipped,
    before its first packet is sent the partition is rolled back to now: its events are shifted
    back and each flow returns the credit of the time not yet elapsed; the new flow then joins
    (the partition changes, windows reset). No shifted event can have fired, so this is exact up
    to the rate estimate. After landing, a partition runs packet by packet and may fast-forward
    again only after it changes.

Counters (``SimResult.counters`` in wormhole mode)
    The kernel's counters of the ``wormhole`` group (:mod:`wormsim.netsim.packet.counters`:
    ``bytes_skipped``, credited bytes net of skip-backs, ``skips``, ``skip_backs``, ...), and
    ``events_skipped_estimate`` = bytes_skipped / payload × (events processed / data packets
    sent); with memoization ``memo_hits``, ``memo_misses``, ``memo_inserts``, ``memo_rejected``
    and ``memo_wall_s``.

Shadow partitions (``share_transients``, on by default)
    See :mod:`wormsim.netsim.packet.wormhole.shadow`: partitions that form at one tick identical to
    an earlier one of that tick (labelled FCG, remaining bytes and bytes in flight) mirror it
    instead of being simulated. Parking takes packets of flows simulated elsewhere off the
    parked ports (:func:`~wormsim.netsim.packet.wormhole.release.release_foreign`); a shadow flow
    that finishes with its leader is a ghost whose packets left in the fabric are dropped
    (:func:`~wormsim.netsim.packet.wormhole.shadow.is_ghost`).

Defaults: see the ``WormholeSpec`` docstring.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.packet import state as st
from wormsim.netsim.packet.counters import published

__all__ = ["MEMO_COUNTERS", "wormhole_counters"]

MEMO_COUNTERS = ("memo_hits", "memo_misses", "memo_inserts", "memo_rejected")
"""The memo bridge's counters (0 until the bridge reports; ``memo_wall_s`` only with memo)."""


def wormhole_counters(A: dict[str, np.ndarray], P: st.Params) -> dict[str, float]:
    """Wormhole counters of a finished run (state arrays ``A``): the kernel's public counters
    of the ``wormhole`` group, the estimate of the events skipped and the memo counters."""
    cnt = A["cnt"]
    skipped = int(cnt[st.C_WH_BYTES])
    sent = max(int(cnt[st.C_DATA_SENT]), 1)
    ev_per_pkt = int(cnt[st.C_EVENTS]) / sent
    return {
        "events_skipped_estimate": skipped / P.mtu * ev_per_pkt,
        **published(cnt, ("wormhole",)),
        **dict.fromkeys(MEMO_COUNTERS, 0),
    }
