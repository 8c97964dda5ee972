"""``EndToEnd.csv`` in SimAI's layout, so scripts written for SimAI's results keep working.

The file describes one rank (the critical rank: the one that finishes last), in microseconds:

* a header ``layer_name,<run name>,fwd compute,wg compute,ig compute,fwd exposed comm,wg exposed
  comm,ig exposed comm,fwd total comm,algbw,busbw,wg total comm,algbw,busbw,ig total comm,algbw,
  busbw,workload finished at`` (``algbw``/``busbw`` repeat, so parsers go by position, as with
  SimAI's);
* one row per layer (``layer<N>``; ops outside the transformer layers, such as the embedding,
  the LM head and the optimizer, in one row ``other``), then ``SUM``;
* ``total exposed comm,<x>,total comp,<y>,total time,<z>``;
* SimAI's summary block: ``File name, Expose DP comm, Expose DP_EP comm, Expose TP comm,
  Expose_EP_comm, Expose_PP_comm, bubble time, total comp, total exposed comm, Total time`` with
  cells ``value (pct%)``.

Mapping: ``fwd`` is the forward phase; ``wg`` ("weight gradient") the data-parallel gradient
traffic (groups ``dp``, ``dp_cp``, ``edp``); ``ig`` the rest of the backward and the optimizer
step. wormsim does not split a layer's backward compute into input- and weight-gradient kernels,
so all backward compute is ``ig compute`` and ``wg compute`` is 0. An op's *exposed* time is the
part of its span no compute covers; ``total comm`` sums the spans; bandwidths are bytes over
time of the layer's collectives (GB/s, busbw with the nccl-tests factors). The summary's exposed
figures are the critical rank's breakdown (:func:`~wormsim.analysis.breakdown.rank_breakdown`).
"""

from __future__ import annotations

import csv
import io

import numpy as np
import polars as pl

from wormsim.units import BYTES_PER_US_PER_GB_PER_S_F, PS_PER_US_F

from .breakdown import uncovered_length, union_intervals
from .collectives import busbw_factor

__all__ = ["HEADER", "endtoend_csv"]

HEADER = [
    "fwd compute",
    "wg compute",
    "ig compute",
    "fwd exposed comm",
    "wg exposed comm",
    "ig exposed comm",
    "fwd total comm",
    "algbw",
    "busbw",
    "wg total comm",
    "algbw",
    "busbw",
    "ig total comm",
    "algbw",
    "busbw",
    "workload finished at",
]

_WG_GROUPS = ("dp", "dp_cp", "edp")


def _exposed(mine: pl.DataFrame) -> np.ndarray:
    """Per op of one rank: the part of its span that no compute covers (ps)."""
    comp = mine.filter(pl.col("kind") == "compute")
    cs, ce = union_intervals(
        comp["start_ps"].to_numpy().astype(np.int64), comp["end_ps"].to_numpy().astype(np.int64)
    )
    s = mine["start_ps"].to_numpy().astype(np.int64)
    e = mine["end_ps"].to_numpy().astype(np.int64)
    out = np.zeros(mine.height, np.int64)
    for i in range(mine.height):
        if e[i] > s[i]:
            out[i] = uncovered_length(s[i : i + 1], e[i : i + 1], cs, ce)
    return out


def _rows(mine: pl.DataFrame, collectives: pl.DataFrame) -> pl.DataFrame:
    coll = collectives.select(
        "coll_id",
        "size_bytes",
        (pl.col("duration_us")).alias("coll_us"),
        pl.struct("collective", "ranks_count")
        .map_elements(
            lambda r: busbw_factor(r["collective"], r["ranks_count"]), return_dtype=pl.Float64
        )
        .alias("factor"),
    )
    spans = mine.with_columns(
        pl.Series("exposed_ps", _exposed(mine)),
        (pl.col("end_ps") - pl.col("start_ps")).alias("span_ps"),
        pl.when(pl.col("layer") >= 0)
        .then(pl.lit("layer") + pl.col("layer").cast(pl.String))
        .otherwise(pl.lit("other"))
        .alias("layer_name"),
        pl.when(pl.col("phase") == "fwd")
        .then(pl.lit("fwd"))
        .when(pl.col("group").is_in(_WG_GROUPS))
        .then(pl.lit("wg"))
        .otherwise(pl.lit("ig"))
        .alias("part"),
    ).join(coll, on="coll_id", how="left")
    return spans


def endtoend_csv(
    intervals: pl.DataFrame,
    ops: pl.DataFrame,
    collectives: pl.DataFrame,
    rank: int,
    rank_row: dict[str, int],
    run_name: str,
) -> str:
    """The text of ``EndToEnd.csv`` for ``rank``.

    Parameters
    ----------
    intervals : :func:`~wormsim.analysis.breakdown.op_intervals` of the run.
    ops : ``ops.parquet`` (for layers).
    collectives : :func:`~wormsim.analysis.collectives.collective_table`.
    rank : the rank to describe (the report uses the critical rank).
    rank_row : its row of :func:`~wormsim.analysis.breakdown.rank_breakdown_table` (ps).
    run_name : the second header cell (SimAI writes its run name there).
    """
    mine = (
        intervals.filter(pl.col("rank") == rank)
        .join(ops.select("op_id", "layer"), on="op_id")
        .sort("start_ps", "op_id")
    )
    t = _rows(mine, collectives)
    layer_order = (
        t.group_by("layer_name").agg(pl.col("start_ps").min()).sort("start_ps")["layer_name"]
    )
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["layer_name", run_name, *HEADER])
    totals = np.zeros(len(HEADER) - 1)

    def bw(part: pl.DataFrame) -> tuple[float, float]:
        p = part.filter(pl.col("coll_us") > 0)
        if p.height == 0:
            return 0.0, 0.0
        time_us = float(p["coll_us"].sum())
        algbw = float(p["size_bytes"].sum()) / time_us / BYTES_PER_US_PER_GB_PER_S_F
        busbw = float((p["size_bytes"] * p["factor"]).sum()) / time_us / BYTES_PER_US_PER_GB_PER_S_F
        return algbw, busbw

    for name in layer_order:
        rows = t.filter(pl.col("layer_name") == name)
        comp = rows.filter(pl.col("kind") == "compute")
        comm = rows.filter(pl.col("kind") == "comm")
        cells = [
            comp.filter(pl.col("phase") == "fwd")["span_ps"].sum() / PS_PER_US_F,
            0.0,
            comp.filter(pl.col("phase") != "fwd")["span_ps"].sum() / PS_PER_US_F,
        ]
        parts = {p: comm.filter(pl.col("part") == p) for p in ("fwd", "wg", "ig")}
        cells += [parts[p]["exposed_ps"].sum() / PS_PER_US_F for p in ("fwd", "wg", "ig")]
        for p in ("fwd", "wg", "ig"):
            cells += [parts[p]["span_ps"].sum() / PS_PER_US_F, *bw(parts[p])]
        totals += np.asarray(cells)
        w.writerow(
            [name, "", *(f"{c:.3f}" for c in cells), f"{rows['end_ps'].max() / PS_PER_US_F:.3f}"]
        )
    sums = [f"{c:.3f}" for c in totals]
    for i in (7, 8, 10, 11, 13, 14):  # bandwidths do not add up: leave them out of SUM
        sums[i - 1] = ""
    finish_us = rank_row["finish_ps"] / PS_PER_US_F
    w.writerow(["SUM", "", *sums, f"{finish_us:.3f}"])
    exposed = sum(v for k, v in rank_row.items() if k.startswith("exposed_")) / PS_PER_US_F
    comp_us = rank_row["compute_ps"] / PS_PER_US_F
    w.writerow(["total exposed comm", f"{exposed:.3f}", "total comp", f"{comp_us:.3f}"]
               + ["total time", f"{finish_us:.3f}"])  # fmt: skip
    w.writerow(
        [
            "File name",
            "Expose DP comm",
            "Expose DP_EP comm",
            "Expose TP comm",
            "Expose_EP_comm",
            "Expose_PP_comm",
            "bubble time",
            "total comp",
            "total exposed comm",
            "Total time",
        ]
    )
    total = max(finish_us, 1e-12)

    def cell(us: float) -> str:
        return f"{us:.3f} ({100 * us / total:.2f}%)"

    g = {
        k: rank_row.get(f"exposed_{k}_ps", 0) / PS_PER_US_F for k in ("dp", "edp", "tp", "ep", "pp")
    }
    w.writerow(
        [
            run_name,
            cell(g["dp"]),
            cell(g["edp"]),
            cell(g["tp"]),
            cell(g["ep"]),
            cell(g["pp"]),
            cell(rank_row.get("bubble_ps", 0) / PS_PER_US_F),
            cell(comp_us),
            cell(exposed),
            cell(finish_us),
        ]
    )
    return out.getvalue()
