"""``bench/pfc_incast.py`` on a small incast: the row's contract and its physics."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import pfc_incast  # noqa: E402


def test_a_small_pfc_incast_row_holds_packet_modes_fcts():
    row = pfc_incast.measure("dctcp", senders=16, size=1_000_000, buffer_mib=0.5)
    assert row["pfc_pauses"] >= 16  # the premise: PFC pauses the senders
    assert row["fct_err_mean_pct"] < 0.5 and row["fct_err_max_pct"] < 2.0
    assert row["events_ratio"] > 0.95  # the sampler costs next to nothing
    assert set(pfc_incast._COLS) - {"date", "commit"} <= set(row)
