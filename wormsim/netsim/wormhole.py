"""Wormhole mode of the packet engine: fast-forwarding steady partitions (paper §6–7).

Enable with ``run_packet(..., wormhole=WormholeSpec(...))``; ``None`` is plain packet mode (the
Wormhole code is never entered, results are bit-identical to before). The mechanics run inside
the numba event loop (:mod:`wormsim.netsim.packet.wh`); this module holds the decisions and the
Python side (counters).

Decisions
---------
Partition unit
    The directed ports of a network flow's data **and** ACK routes (``partition_ports=
    "data_and_ack"``, the default), or those its *data* uses (``"data"``, as the paper's partitions;
    ``"auto"``: data, but data and ACK under TIMELY, as the 256/1024-GPU examples). Partitions are
    the connected components of the active network flows over shared ports, recomputed by a
    union-find over the active flows' routes at the first sampler tick after any network flow starts
    or finishes: O(sum of the active routes) per pass (the pass walks an active-flow list and the
    ports it labelled last time, never all flows or ports). A partition is labelled by its smallest
    QP id; a component whose member set is unchanged keeps its label and state, and a changed one
    resets the windows of *all* its members. Intra-server (NVLink fluid) flows are neither
    partitioned nor fast-forwarded. PFC frames are not attributed (PFC-coupled partitions are not
    merged; run with PFC off or accept that approximation).

    Measured reason for data ports at scale (data and ACK ports stay the default: on the bundled
    32-GPU default experiment data ports with shadow partitions were 1.7 % off in iteration time
    before engine model 4's shadow fixes, 0.08 % since, data and ACK ports 0.02 %): with data
    and ACK ports every data-parallel ring is one partition (each flow's ACKs share the next
    flow's uplink), so a flow finishing or starting anywhere in the ring re-forms the whole ring
    and resets every window (GPT-22B/256: 33,281
    partitions formed, 5,050 distinct keys among 5,111 misses; 98.28 % of events skipped). With data
    ports the rings split into channel pairs whose steps recur: 59 misses, 677 hits and 41,518
    shadowed partitions, 99.90 % skipped, 0.20 % iteration error. What the ACK coupling did
    physically is kept by :mod:`wormsim.netsim.packet.tunnel`: other partitions' control packets
    pass a skipped partition's frozen port at its queue's drain time, control packets reaching a
    skipped sender are held by its skip, and skipped and shadowed flows keep loading the ports of
    their ACK routes (a staggered 4-flow ring finished 6 % early without that phantom load, within 1
    % with it; shadows keep their leader's current rate: frozen at the start rate they made the
    leader of a ring 9.9 % slow). The FCG's vertices carry what else shapes a transient there: the
    flow's base RTT and the ACK streams on its data ports.

Steady detection (paper §6)
    Every ``sample_period_ns`` two signals are sampled per active network flow: its delivered
    rate (bytes acked between the last ACKs of two consecutive periods over the exact time between
    those ACKs) and its congestion control's rate variable. The last ``window`` samples of each
    are kept; with ``signal="both"`` (default) a flow is steady when (max − min) / mean <
    ``theta`` for *both*, and, for rate-based CCs (no window: DCQCN, TIMELY, DCTCP), when its
    sending rate — min(CC rate, its NIC's round-robin share) — matches its delivered rate on the
    wire within ``max_rate_gap``. The delivered rate alone declared TIMELY steady in its first
    200 µs, when both flows of an incast sit at line rate with a queue building behind them (a
    flat delivered rate, -15 % FCT after the skip); the CC rate alone is blind to what a window
    lets through. A partition is steady when all its flows are. For DCQCN the window is stretched
    to span twice its longest timer (rate-increase steps look flat over short windows). Windows
    reset (the first sample after a reset only sets the baseline) whenever the partition changes.

Memoization (paper §4–5)
    When a partition forms (the pass above), the kernel stops and
    :class:`~wormsim.netsim.memo_bridge.MemoBridge` builds its FCG — vertex weight = the flow's CC
    rate at formation (a flow that started since the previous pass: the rate it started at, so
    the key does not depend on where the sampler tick falls), bucketed by
    :data:`~wormsim.memo.DEFAULT_QUANTIZER` (5 % log buckets), with its base RTT's bucket and
    (data ports) the ACK streams crossing its data ports; edges = shared ports — and looks it
    up under :func:`~wormsim.netsim.memo_bridge.memo_namespace` (CC and all its parameters,
    link rates and delays, buffer, MTU, ECN, PFC, detector, engine model).
    *Miss*: at steady entry the kernel snapshots ``T_conv`` (formation to steady entry,
    detection window included: that is the time a hit saves), ``Size_f`` (bytes acked since
    formation), the window-mean end rates and each sender's congestion-control state
    (:func:`~wormsim.netsim.packet.skip.save_cc`: its window-mean sending rate, and DCQCN's
    alpha, target and stage, HPCC's U and stage, TIMELY's streak, RTT gradient and last RTT,
    DCTCP's alpha), and the bridge stores them. *Hit*: if every
    flow has more than ``Size_f`` + its tail margin left, the partition jumps over the transient
    and the steady run after it in one shift (ΔT = T_conv + min_f (remaining_f − Size_f −
    margin_f) / R_f), each flow is credited Size_f + R_f·(ΔT − T_conv), and the senders take the
    stored state (at the stored sending rate, not R_f: a windowed sender's rate variable sits
    above what its window delivers, and a flow put at its delivered rate climbed back at
    DCTCP's additive step, 15.6 % late on the parking-lot scenario; DCQCN restarts its
    timers, as after a cut: it raises its rate only on its rate-increase timer, so a bare rate
    change left flows slow for good, +36 % FCT on GPT-13B/128); queues,
    windows and in-flight packets stay as they were, as in fast-forward. Otherwise the hit is
    *rejected* and the partition is simulated (it is not stored again: an entry exists).
    Skip-back during a replay interpolates the credit (Size_f · elapsed / T_conv inside the
    transient). Under DCQCN, replaying the rate alone cost 0.55 % iteration time on
    GPT-13B/128, with the state 0.05 % (``memo_replay_dcqcn``, on by default; off, DCQCN hits
    count as ``memo_rejected``).
    Repeated lookups of one run are answered from a cache keyed by the partition's labelled FCG
    (see the bridge).

Fast-forward (paper §7)
    When a partition becomes steady and has not been skipped since it formed: ΔT = min over its
    flows of (remaining_f − margin_f) / R̂_f with R̂_f the window mean and margin_f = R̂_f ·
    max(``tail_rtts`` × base RTT_f, ``tail_windows`` × window span) (the tail is simulated packet by
    packet; defaults 2 RTTs and 0: two window spans of tail per flow were half the
    remaining events on GPT-13B/128 for no accuracy gain); ΔT is rounded down to whole ns and
    skipped only if ΔT ≥ ``min_skip_periods`` × sample period. Each flow gets credit_f = ⌊R̂_f·ΔT /
    payload⌋ · payload bytes (capped so at least one packet is still unsent): ``qp_size`` shrinks by
    the credit and ``qp_credit`` records it, so the flow finishes credit_f bytes earlier in its own
    sequence space; packets in flight are not renumbered and the last packet keeps its size (credits
    are whole payloads). The partition's pending events (owners: its ports and its QPs' DCQCN
    timers), switch busy times, link FIFOs, NIC wake-ups, pacing times ``qp_next_avail``, receiver
    NACK timers and the timestamps its packets and INT histories carry are shifted by ΔT; its
    buffered packets stay where they are (frozen occupancy). The global clock is not jumped. The
    sampler ignores a skipped partition.

Skip-back (real-time interrupt)
    When the DAG releases a network flow whose routes touch a partition that is still skipped
    (now < skip_start + ΔT), before its first packet is sent the partition is rolled back to now:
    its events are shifted by −(skip_start + ΔT − now) (rounded to ns), and each flow gets back
    credit_f − ⌊R̂_f·(now − skip_start)/payload⌋·payload bytes; the new flow then joins (the
    partition changes, windows reset). No shifted event can have fired, so this is exact up to
    the rate estimate. After landing (now ≥ skip_start + ΔT) a partition runs packet by packet
    and may fast-forward again only after it changes.

Counters (``SimResult.counters`` in wormhole mode)
    ``bytes_skipped`` (credited bytes net of skip-backs), ``skips``, ``skip_backs``,
    ``steady_entries`` (partition became steady), ``partitions_formed`` (new or changed
    partitions), ``events_skipped_estimate`` = bytes_skipped / payload × (events processed /
    data packets sent) of this run; with memoization ``memo_hits``, ``memo_misses``,
    ``memo_inserts`` (entries this run created), ``memo_rejected`` (hits that did not fit) and
    ``memo_wall_s`` (time spent in the bridge).

Shadow partitions (``share_transients``, on by default)
    See :mod:`wormsim.netsim.packet.shadow`: partitions that form at one tick identical to an
    earlier one of that tick (labelled FCG, remaining bytes and bytes in flight) mirror it
    instead of being simulated. Parking takes packets of flows simulated elsewhere off the
    parked ports (:func:`~wormsim.netsim.packet.switch.release_foreign`); a shadow flow that
    finishes with its leader is a ghost whose packets left in the fabric are dropped
    (:func:`~wormsim.netsim.packet.core.is_ghost`).

Defaults (``WormholeSpec``), chosen by measurement (see tests/netsim/test_wormhole.py):
    see the ``WormholeSpec`` docstring.
"""

from __future__ import annotations

import numpy as np

from wormsim.netsim.packet import state as st

__all__ = ["wormhole_counters"]


def wormhole_counters(A: dict[str, np.ndarray], P: st.Params) -> dict[str, float]:
    """Wormhole counters of a finished run (state arrays ``A``)."""
    cnt = A["cnt"]
    skipped = int(cnt[st.C_WH_BYTES])
    sent = max(int(cnt[st.C_DATA_SENT]), 1)
    ev_per_pkt = int(cnt[st.C_EVENTS]) / sent
    return {
        "events_skipped_estimate": skipped / P.mtu * ev_per_pkt,
        "bytes_skipped": skipped,
        "skips": int(cnt[st.C_WH_SKIPS]),
        "skip_backs": int(cnt[st.C_WH_BACKS]),
        "steady_entries": int(cnt[st.C_WH_STEADY]),
        "partitions_formed": int(cnt[st.C_WH_PARTS]),
        "control_tunnelled": int(cnt[st.C_WH_TUNNELS]),
        "control_deferred": int(cnt[st.C_WH_DEFERS]),
        "parked": int(cnt[st.C_WH_PARKED]),
        "parked_released": int(cnt[st.C_WH_UNPARKED]),
        "shadow_flows_mirrored": int(cnt[st.C_WH_MIRRORED]),
        "shadow_flows_held": int(cnt[st.C_WH_HOLDS]),
        "shadows_remapped": int(cnt[st.C_WH_REMAPS]),
        "shadows_orphaned": int(cnt[st.C_WH_ORPHANS]),
        "shadows_emptied": int(cnt[st.C_WH_EMPTIED]),
        "shadow_ports_moved_back": int(cnt[st.C_WH_PORTS_BACK]),
        "control_released": int(cnt[st.C_WH_RELEASED]),
        "memo_hits": 0,
        "memo_misses": 0,
        "memo_inserts": 0,
        "memo_rejected": 0,
    }
