"""What the memo bridge records: a missed partition as it formed (:class:`Formation`), and the
entry it stores once that partition is steady (:func:`memo_entry`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from wormsim.memo import MemoEntry
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["Formation", "memo_entry"]


class Formation(NamedTuple):
    """A missed partition as it formed: its entry is keyed by the partition as it formed, and
    its flows' start-ups are judged as they were then."""

    qs: np.ndarray  # its QPs
    weights: np.ndarray  # their vertex weights
    starting: np.ndarray  # which were in their start-up


def memo_entry(A: dict[str, np.ndarray], r: int, qs: np.ndarray, sent: np.ndarray) -> MemoEntry:
    """The entry of partition ``r`` (flows ``qs``) at its steady entry: its end rates, the
    bytes ``sent`` each flow acked during the transient (moved to age 0), ``T_conv`` and each
    sender's congestion-control state, as the kernel snapshot them (``wh_*`` arrays)."""
    return MemoEntry(
        end_rates_bps={int(q): float(A["wh_rend_Bpps"][q]) * BPS_PER_BYTE_PER_PS for q in qs},
        sent_bytes=dict(zip(qs.tolist(), sent.tolist(), strict=True)),
        t_conv_ps=int(A["wh_tconv_ps"][r]),
        cc_state={int(q): tuple(A["wh_ccs"][q].tolist()) for q in qs},
    )
