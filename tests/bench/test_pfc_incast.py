"""``bench/pfc_incast.py`` on its default incast under DCTCP (6.7 % mean FCT error before the
steadiness test refused windows with pauses): the row's contract and its physics."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import pfc_incast  # noqa: E402


def test_a_small_pfc_incast_row_holds_packet_modes_fcts():
    row = pfc_incast.measure("dctcp", senders=32, size=2_000_000, buffer_mib=2.0)
    assert row["pfc_pauses"] >= 32  # the premise: PFC pauses the senders
    assert row["fct_err_mean_pct"] < 0.5 and row["fct_err_max_pct"] < 2.0
    assert row["events_ratio"] > 0.95  # the sampler costs next to nothing
    assert set(pfc_incast._COLS) - {"date", "commit"} <= set(row)
