"""Fabric state over time for the trace's counter tracks: link utilisation per tier, and the
deepest switch queue.

:func:`tier_utilisation` needs only the flows and the ports of a run: a fabric flow whose route
tops out at switch level ``k`` (``tier`` ``leaf``, ``spine``, …) crosses exactly one port of every
up tier (``host→leaf``, ``leaf→spine``, …) and one of every down tier up to level ``k``, so the
bits per second a tier carries at time ``t`` is the sum of the rates of the flows active at
``t`` that reach it, and its utilisation that sum over the tier's total line rate. A flow counts
at its average rate (bytes over FCT) over its life, which keeps the track exact in bytes per
bin and cheap for millions of flows (prefix sums, no loop over flows).

:func:`deepest_queue` needs the sampled queues of a packet-mode run with monitors
(``wormsim netsim run RUN --monitor-period-ns N``): the largest switch queue at every sample.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from wormsim.netsim.fabric.paths import LEVEL_NAMES
from wormsim.units import BPS_PER_BYTE_PER_PS

__all__ = ["tier_utilisation", "deepest_queue"]


def _level(name: str) -> int:
    for level, known in LEVEL_NAMES.items():
        if known == name:
            return int(level)
    return int(name.removeprefix("level")) if name.startswith("level") else -1


def _bin_rate(start: np.ndarray, end: np.ndarray, rate: np.ndarray, edges: np.ndarray):
    """Mean of ``Σ rate_i · [start_i ≤ t < end_i]`` over every bin between ``edges``."""

    def integral(t: np.ndarray, at: np.ndarray) -> np.ndarray:
        # Σ rate · min(t, at_i), by prefix sums over ``at`` sorted
        order = np.argsort(at, kind="stable")
        a, r = at[order].astype(np.float64), rate[order]
        cum_ra = np.concatenate(([0.0], np.cumsum(r * a)))
        cum_r = np.concatenate(([0.0], np.cumsum(r)))
        k = np.searchsorted(a, t, side="right")
        return cum_ra[k] + t * (cum_r[-1] - cum_r[k])

    f = integral(edges, end) - integral(edges, start)
    return np.diff(f) / np.diff(edges)


def tier_utilisation(flows: pl.DataFrame, ports: pl.DataFrame, bins: int = 400) -> pl.DataFrame:
    """Utilisation of every fabric port tier over time.

    Parameters
    ----------
    flows : polars.DataFrame
        ``start_ps``, ``finish_ps``, ``size_bytes`` and ``tier`` (the top switch level of the
        route; ``nvlink`` and ``local`` flows do not use the fabric and are left out).
    ports : polars.DataFrame
        ``tier`` (``"host→leaf"``, …) and ``rate_bps`` of every directed port.
    bins : int
        Time bins over ``[0, last finish]``.

    Returns
    -------
    polars.DataFrame
        ``time_ps`` (bin start), ``tier``, ``utilisation_pct`` (0-100), tiers in port order.
    """
    schema = {"time_ps": pl.Int64, "tier": pl.String, "utilisation_pct": pl.Float64}
    done = flows.filter((pl.col("finish_ps") > pl.col("start_ps")) & (pl.col("start_ps") >= 0))
    if done.height == 0 or ports.height == 0:
        return pl.DataFrame(schema=schema)
    end_ps = int(done["finish_ps"].max())
    edges = np.linspace(0.0, float(end_ps), bins + 1)
    start = done["start_ps"].to_numpy().astype(np.float64)
    finish = done["finish_ps"].to_numpy().astype(np.float64)
    rate = done["size_bytes"].to_numpy() * BPS_PER_BYTE_PER_PS / (finish - start)  # bit/s
    top = np.array([_level(t) for t in done["tier"].cast(pl.String).to_list()])
    capacity = ports.group_by("tier", maintain_order=True).agg(pl.col("rate_bps").sum())
    out = []
    for tier, cap in capacity.iter_rows():
        a, _, b = str(tier).partition("→")
        level = max(_level(a), _level(b))
        if level <= 0 or not cap:
            continue
        use = top >= level
        if not use.any():
            util = np.zeros(bins)
        else:
            util = 100.0 * _bin_rate(start[use], finish[use], rate[use], edges) / float(cap)
        out.append(
            pl.DataFrame(
                {"time_ps": edges[:-1].astype(np.int64), "tier": str(tier), "utilisation_pct": util}
            )
        )
    return pl.concat(out) if out else pl.DataFrame(schema=schema)


def deepest_queue(queue_samples: pl.DataFrame) -> pl.DataFrame:
    """The largest sampled queue over every port at each sample time: ``time_ps, bytes``."""
    if queue_samples.height == 0 or "bytes" not in queue_samples.columns:
        return pl.DataFrame(schema={"time_ps": pl.Int64, "bytes": pl.Int64})
    return queue_samples.group_by("time_ps").agg(pl.col("bytes").max()).sort("time_ps")
