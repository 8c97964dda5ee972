"""Wormhole mode of the packet engine: fast-forwarding steady partitions (DESIGN §5, paper §6–7).

Enable with ``run_packet(..., wormhole=WormholeSpec(...))``; ``None`` is plain packet mode (the
Wormhole code is never entered, results are bit-identical to before). The mechanics run inside
the numba event loop (:mod:`wormsim.netsim.packet.wh`); this module holds the decisions and the
Python side (counters).

Decisions
---------
Partition unit (paper D10)
    The directed ports a network flow's packets use: its data route **and** its ACK route (ACKs
    share switch queues with data, so flows coupled only through ACKs are coupled). Partitions are
    the connected components of the active network flows over shared ports, recomputed from
    scratch by a union-find over the active flows' routes at the first sampler tick after any
    network flow starts or finishes: O(sum of route lengths + ports) per recompute, i.e. a few
    µs at hundreds of active flows. A partition is labelled by its smallest QP id; a component
    whose member set is unchanged keeps its label and state. Intra-server (NVLink fluid) flows
    are neither partitioned nor fast-forwarded. PFC frames are not attributed (PFC-coupled
    partitions are not merged; run with PFC off or accept that approximation).

Steady detection (paper §6)
    Every ``sample_period_ns`` each active network flow's delivered rate is sampled as the bytes
    acked between the last ACKs of two consecutive periods divided by the exact time between those
    ACKs (whole packets per period were too noisy: ±1 packet in 5 µs is ~17 % at 25 Gbps); the
    last ``window`` samples are kept per flow; a flow is steady when (max − min) / mean <
    ``theta``, a partition when all its flows are. For DCQCN the window must also span twice its
    longest timer (rate-increase steps and the minimum-rate floor look flat over short windows).
    Windows are reset (first sample after a reset only sets the baseline) whenever the flow's
    partition changes.

Fast-forward (paper §7)
    When a partition becomes steady and has not been skipped since it formed:
    ΔT = min over its flows of (remaining_f − margin_f) / R̂_f with R̂_f the window mean and
    margin_f = R̂_f · max(4 × base RTT_f, 2 × window span) (the tail is simulated packet by
    packet, paper D8); ΔT is rounded down to whole ns and skipped only if
    ΔT ≥ ``min_skip_periods`` × sample period. Each flow gets credit_f = ⌊R̂_f·ΔT / payload⌋
    · payload bytes (capped so at least one packet is still unsent): ``qp_size`` shrinks by the
    credit and ``qp_credit`` records it, so the flow finishes credit_f bytes earlier in its own
    sequence space; packets in flight are not renumbered and the last packet keeps its size
    (credits are whole payloads). The partition's pending events (owners: its ports and its QPs'
    DCQCN timers), switch busy times, link FIFOs, NIC wake-ups, pacing times ``qp_next_avail``,
    receiver NACK timers and the timestamps its packets and INT histories carry are shifted by
    ΔT; its buffered packets stay where they are (frozen occupancy). The global clock is not
    jumped. The sampler ignores a skipped partition.

Skip-back (real-time interrupt)
    When the DAG releases a network flow whose routes touch a partition that is still skipped
    (now < skip_start + ΔT), before its first packet is sent the partition is rolled back to now:
    its events are shifted by −(skip_start + ΔT − now) (rounded to ns), and each flow gets back
    credit_f − ⌊R̂_f·(now − skip_start)/payload⌋·payload bytes; the new flow then joins (the
    partition changes, windows reset). No shifted event can have fired, so this is exact up to
    the rate estimate. After landing (now ≥ skip_start + ΔT) a partition runs packet by packet
    and may fast-forward again only after it changes.

Counters (``PacketResult.counters`` in wormhole mode)
    ``bytes_skipped`` (credited bytes net of skip-backs), ``skips``, ``skip_backs``,
    ``steady_entries`` (partition became steady), ``partitions_formed`` (new or changed
    partitions), ``events_skipped_estimate`` = bytes_skipped / payload × (events processed /
    data packets sent) of this run, and ``memo_hits``/``memo_misses``/``memo_inserts``
    (memoization is not wired yet: always 0).

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
        "memo_hits": 0,
        "memo_misses": 0,
        "memo_inserts": 0,
        "memo_rejected": 0,
    }
