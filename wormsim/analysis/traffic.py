"""Flows and links for people: FCT slowdown by traffic class, tier and collective; link load.

*Slowdown* is a flow's FCT over its ideal FCT (``ideal_fct_ps`` of ``flows.parquet``: its bytes at
the route's bottleneck rate plus the base RTT, as HPCC ns-3 computes it; an NVLink flow's bytes at
the NVLink rate), so 1 means the flow saw an empty network. 0-byte flows have no slowdown.
*Utilisation* of a port is the payload it carried over the iteration at its line rate.
"""

from __future__ import annotations

import polars as pl

from wormsim.netsim.packet import port_outputs
from wormsim.netsim.packet.port_outputs import PortOutput
from wormsim.units import BPS_PER_GBPS_F, PS_PER_US_F

__all__ = ["flow_table", "flow_stats", "link_table", "tier_table"]


def flow_table(flows: pl.DataFrame) -> pl.DataFrame:
    """``flows.parquet`` with ``traffic_class`` (the parallel group, ``other`` if none),
    ``fct_us``, ``ideal_fct_us`` and ``slowdown_x`` (null where the ideal is 0); ``hops`` is
    named ``hops_count``."""
    return flows.rename({"hops": "hops_count"}, strict=False).with_columns(
        pl.when(pl.col("group").fill_null("") == "")
        .then(pl.lit("other"))
        .otherwise(pl.col("group"))
        .alias("traffic_class"),
        (pl.col("fct_ps") / PS_PER_US_F).alias("fct_us"),
        (pl.col("ideal_fct_ps") / PS_PER_US_F).alias("ideal_fct_us"),
        pl.when(pl.col("ideal_fct_ps") > 0)
        .then(pl.col("fct_ps") / pl.col("ideal_fct_ps"))
        .alias("slowdown_x"),
    )


def flow_stats(flows: pl.DataFrame) -> pl.DataFrame:
    """p50/p99/max FCT and slowdown per traffic class, per fabric tier and per collective.

    ``flows`` is :func:`flow_table`. One row per (``by``, ``class``) with ``flows_count``,
    ``size_bytes`` (total), ``fct_p50_us``, ``fct_p99_us``, ``fct_max_us``, ``slowdown_p50_x``,
    ``slowdown_p99_x``, ``slowdown_max_x``.
    """
    parts = []
    # lazily, over the columns the statistics read: no copy of the whole flow table
    needed = ("traffic_class", "tier", "collective", "size_bytes", "fct_us", "slowdown_x")
    lazy = flows.lazy().select(needed)
    for by in ("traffic_class", "tier", "collective"):
        part = (
            lazy.group_by(pl.col(by).alias("class"))
            .agg(
                pl.len().cast(pl.Int64).alias("flows_count"),
                pl.col("size_bytes").sum().alias("size_bytes"),
                pl.col("fct_us").quantile(0.5, "linear").alias("fct_p50_us"),
                pl.col("fct_us").quantile(0.99, "linear").alias("fct_p99_us"),
                pl.col("fct_us").max().alias("fct_max_us"),
                pl.col("slowdown_x").quantile(0.5, "linear").alias("slowdown_p50_x"),
                pl.col("slowdown_x").quantile(0.99, "linear").alias("slowdown_p99_x"),
                pl.col("slowdown_x").max().alias("slowdown_max_x"),
            )
            .sort("size_bytes", descending=True)
            .with_columns(pl.lit(by).alias("by"))
            .collect()
        )
        parts.append(part)
    return pl.concat(parts).select("by", "class", pl.exclude("by", "class"))


def _shown(o: PortOutput) -> tuple[str, ...]:
    """The link table's columns of a per-port output: a time (ps) in µs and in % of the
    iteration, anything else as it is."""
    if o.unit != "ps":
        return (o.column,)
    stem = o.column.removesuffix("_ps")
    return (f"{stem}_us", f"{stem}_pct")


def link_table(ports: pl.DataFrame, iteration_ps: int) -> pl.DataFrame:
    """``ports.parquet`` for people: ``rate_Gbps``, ``utilisation_pct`` (payload over the
    iteration at line rate), and every per-port output
    (:data:`~wormsim.netsim.packet.port_outputs.PORT_OUTPUTS`: queue, pause-frame and ECN-mark
    counts; a time such as ``pfc_paused_ps`` as ``pfc_paused_us`` and ``pfc_paused_pct`` of
    the iteration); sorted by utilisation."""
    t = max(int(iteration_ps), 1)
    outputs = port_outputs.PORT_OUTPUTS  # read when called: a row added is shown
    times = [o for o in outputs if o.unit == "ps"]
    return (
        ports.with_columns(
            (pl.col("rate_bps") / BPS_PER_GBPS_F).alias("rate_Gbps"),
            (pl.col("payload_bytes") * 8e14 / (pl.col("rate_bps").cast(pl.Float64) * t)).alias(
                "utilisation_pct"
            ),
            *((pl.col(o.column) / PS_PER_US_F).alias(_shown(o)[0]) for o in times),
            *((pl.col(o.column) * 100.0 / t).alias(_shown(o)[1]) for o in times),
        )
        .select(
            "port",
            "node",
            "peer",
            "tier",
            "rate_Gbps",
            "payload_bytes",
            "utilisation_pct",
            *(c for o in outputs for c in _shown(o)),
        )
        .sort("utilisation_pct", "port", descending=[True, False])
    )


def tier_table(links: pl.DataFrame) -> pl.DataFrame:
    """Per tier (``host→leaf``, ``leaf→spine``, ...): ports, bytes, mean and max utilisation,
    and every per-port output aggregated as its row says (largest queue, total PFC pause time,
    pause frames and ECN marks). ``links`` is :func:`link_table`."""
    outputs = [
        pl.col(_shown(o)[0]).max() if o.tier == "max" else pl.col(_shown(o)[0]).sum()
        for o in port_outputs.PORT_OUTPUTS
    ]
    return (
        links.group_by("tier")
        .agg(
            pl.len().cast(pl.Int64).alias("ports_count"),
            pl.col("payload_bytes").sum(),
            pl.col("utilisation_pct").mean().alias("utilisation_mean_pct"),
            pl.col("utilisation_pct").max().alias("utilisation_max_pct"),
            *outputs,
        )
        .sort("tier")
    )
