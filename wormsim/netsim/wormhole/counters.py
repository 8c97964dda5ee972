"""Wormhole's counters of a finished run (:func:`wormhole_counters`), for ``summary.json``.

The kernel counts skips, skip-backs, steady entries, partitions, tunnelled control packets and
shadows in its counter array (:mod:`wormsim.netsim.packet.state`); this module names them. The
memo bridge adds its own (``memo_*``, :meth:`~wormsim.netsim.wormhole.bridge.MemoBridge.counters`)
and the run's choices are its plan (:mod:`wormsim.netsim.wormhole.plan`). How Wormhole works and
why: ``docs/wormhole.md``.
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
        "bytes_shadowed": int(cnt[st.C_WH_SHADOW_BYTES]),
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
