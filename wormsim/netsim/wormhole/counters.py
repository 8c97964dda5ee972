"""Wormhole's counters of a finished run (:func:`wormhole_counters`), for ``summary.json``.

The kernel counts skips, skip-backs, steady entries, partitions, tunnelled control packets and
shadows in its counter array; their public names are rows of
:mod:`wormsim.netsim.packet.counters` and this module adds what is derived from them. The
memo bridge adds its own (``memo_*``, :meth:`~wormsim.netsim.wormhole.bridge.MemoBridge.counters`)
and the run's choices are its plan (:mod:`wormsim.netsim.wormhole.plan`). How Wormhole works and
why: ``docs/wormhole.md``.
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
