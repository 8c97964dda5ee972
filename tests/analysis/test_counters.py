"""Counter tracks: per-tier utilisation from the flows (exact in bytes), the deepest queue."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wormsim.analysis.counters import deepest_queue, tier_utilisation

PORTS = pl.DataFrame(
    {
        "tier": ["host→leaf"] * 2 + ["leaf→host"] * 2 + ["leaf→spine", "spine→leaf"],
        "rate_bps": [100_000_000_000] * 6,
    }
)


def test_a_lone_flow_fills_its_tiers_and_nothing_else():
    # 12.5 MB in 1 ms = 100 Gbit/s: a full host link, half of the two host links of a tier
    flows = pl.DataFrame(
        {
            "start_ps": [0],
            "finish_ps": [1_000_000_000],
            "size_bytes": [12_500_000],
            "tier": ["leaf"],
        }
    )
    u = tier_utilisation(flows, PORTS, bins=10)
    by = {t: g["utilisation_pct"].to_numpy() for (t,), g in u.group_by("tier")}
    np.testing.assert_allclose(by["host→leaf"], 50.0)
    np.testing.assert_allclose(by["leaf→host"], 50.0)
    np.testing.assert_allclose(by["leaf→spine"], 0.0)  # a leaf flow never goes up to the spine


def test_bytes_are_conserved_over_the_bins():
    rng = np.random.default_rng(1)
    n = 500
    start = rng.integers(0, 10**9, n)
    flows = pl.DataFrame(
        {
            "start_ps": start,
            "finish_ps": start + rng.integers(1, 10**9, n),
            "size_bytes": rng.integers(1, 10**7, n),
            "tier": rng.choice(["leaf", "spine", "nvlink"], n),
        }
    )
    u = tier_utilisation(flows, PORTS, bins=37)
    span = float(flows["finish_ps"].max()) / 37
    up = u.filter(pl.col("tier") == "leaf→spine")["utilisation_pct"].to_numpy()
    carried = (up / 100 * 100e9 * span / 1e12 / 8).sum()  # bytes through the spine uplinks
    expected = flows.filter(pl.col("tier") == "spine")["size_bytes"].sum()
    assert carried == pytest.approx(expected, rel=1e-9)


def test_deepest_queue_is_the_largest_at_each_sample():
    q = pl.DataFrame({"time_ps": [0, 0, 5, 5], "port": [1, 2, 1, 2], "bytes": [3, 9, 4, 1]})
    assert deepest_queue(q).rows() == [(0, 9), (5, 4)]
    assert deepest_queue(pl.DataFrame()).height == 0
