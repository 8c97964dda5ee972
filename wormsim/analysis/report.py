"""The report of a run: every table, plot and trace, computed once and written together.

:func:`analyse` turns a :class:`~wormsim.analysis.run_data.RunData` into a :class:`Report`
(polars frames and one sentence about the slowest rank); :func:`write_report` writes it into
``RUN/report/``:

===========================  ================================================================
``report.md``                summary, tables with units, the plots, engine (and Wormhole)
                             counters, the resolved experiment
``breakdown.{parquet,csv}``  where the time goes: critical rank, mean rank, critical path
``ranks.{parquet,csv}``      the breakdown of every rank
``collectives.{parquet,csv}`` one row per collective instance, with its idle-fabric slowdown
``flow_stats.{parquet,csv}`` FCT and slowdown percentiles by traffic class, tier, collective
``links.{parquet,csv}``      every directed port: tier, load, queue, PFC, ECN
``tiers.{parquet,csv}``      the links per tier
``flows.parquet``            every flow with its ideal FCT and slowdown
``plots/*.png``              timeline, FCT-slowdown CDF, link utilisation, bus bandwidth
``trace.json``               Chrome trace-event timeline (ui.perfetto.dev, chrome://tracing)
``EndToEnd.csv``             SimAI's result layout (:mod:`~wormsim.analysis.simai_csv`)
===========================  ================================================================

The directory is written next to ``report/`` and renamed into place, so a report is whole or
absent; rerunning replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wormsim.collective.dag import DagArrays
from wormsim.netsim.packet.counters import reported
from wormsim.progress import staged
from wormsim.rundir import read_parquet, staged_dir, write_parquet, write_text
from wormsim.units import PS_PER_S_F, PS_PER_US_F

from . import plots
from .breakdown import (
    CATEGORIES,
    critical_path,
    iteration_breakdown,
    op_intervals,
    rank_breakdown_table,
    slowest_rank_reason,
)
from .collectives import alone_durations, collective_table
from .counters import deepest_queue, tier_utilisation
from .run_data import RunData
from .simai_csv import endtoend_csv
from .tables import markdown_table
from .trace import bound_trace, write_trace
from .traffic import flow_stats, flow_table, link_table, tier_table

__all__ = ["REPORT_DIR", "Report", "AloneRunner", "analyse", "write_report", "alone_runner"]

#: The report's directory inside the run directory.
REPORT_DIR = "report"


@dataclass(frozen=True)
class AloneRunner:
    """The idle-fabric replay of a run (:func:`alone_runner`).

    Attributes
    ----------
    run : simulates a DAG (:class:`~wormsim.collective.dag.DagArrays`) alone on the run's
        fabric: ``dag -> (node_start_ps, node_finish_ps)``.
    key : a DAG's canonical key (:func:`~wormsim.analysis.alone_key.alone_key`); DAGs with
        equal keys finish at the same times under ``run``. ``None``: no sharing.
    """

    run: Callable[[DagArrays], tuple[np.ndarray, np.ndarray]]
    key: Callable[[DagArrays], Hashable] | None = None


_TABLES = ("breakdown", "ranks", "collectives", "flow_stats", "links", "tiers")

#: Most rows a report table is also written as CSV with (every table is in parquet whole): a
#: per-instance or per-rank table of a cluster of thousands of GPUs is not read as text.
REPORT_CSV_ROWS = 100_000
#: Most flows the report's ``flows.parquet`` holds; past it the run's own ``flows.parquet``
#: (every flow, its FCT and ideal FCT) is the per-flow table and the report says so.
REPORT_FLOW_ROWS = 2_000_000
#: Most op slices of the report's ``trace.json`` (about 60 MB of JSON); past it the ops of evenly
#: spread ranks are kept (:func:`~wormsim.analysis.trace.bound_trace`) and the report says which.
REPORT_TRACE_EVENTS = 250_000

#: ``summary.json`` keys of the engine table besides the packet kernel's counters: the run's
#: timings and the flow engine's counters (the kernel's are rows of
#: :data:`wormsim.netsim.packet.counters.COUNTERS` marked ``report``).
_TIMINGS = ("sim_wall_s", "compile_s", "build_s", "stage_wall_s")
_FLOW_KEYS = ("events_processed", "rate_recomputations", "filling_rounds", "peak_active_flows")
#: ``summary.json`` keys of the Wormhole table besides the kernel's counters (the driver's
#: estimate and the memo bridge's counters).
_WORMHOLE_EXTRA = (
    "events_skipped_estimate",
    "memo_hits",
    "memo_misses",
    "memo_inserts",
    "memo_rejected",
    "memo_wall_s",
)


def _engine_keys() -> tuple[str, ...]:
    keys = (*reported(("engine", "network")), *_TIMINGS, *_FLOW_KEYS)
    return tuple(dict.fromkeys(keys))  # events_processed: both engines count it


def _wormhole_keys() -> tuple[str, ...]:
    return (*reported(("wormhole",)), *_WORMHOLE_EXTRA)


@dataclass(frozen=True)
class Report:
    """Everything the report shows, as tables (the units are in the column names).

    Attributes
    ----------
    run : RunData
    intervals : per op: rank, kind, group, start/sync/end (ps) and trace labels.
    breakdown : :func:`~wormsim.analysis.breakdown.iteration_breakdown` with the critical path.
    ranks : the breakdown of every rank (µs), with its pipeline stage.
    critical_path : the nodes of the critical path.
    collectives : one row per collective instance (with ``alone_us``, ``slowdown_x`` when the
        idle-fabric replay ran).
    flows : every flow with ``traffic_class``, ``ideal_fct_us``, ``slowdown_x``.
    flow_stats, links, tiers : see :mod:`~wormsim.analysis.traffic`.
    slowest : which rank finishes last and why, in one sentence.
    """

    run: RunData
    intervals: pl.DataFrame
    breakdown: pl.DataFrame
    ranks: pl.DataFrame
    critical_path: pl.DataFrame
    collectives: pl.DataFrame
    flows: pl.DataFrame
    flow_stats: pl.DataFrame
    links: pl.DataFrame
    tiers: pl.DataFrame
    slowest: str

    @property
    def iteration_time_s(self) -> float:
        """Simulated iteration time (s)."""
        return self.run.iteration_ps / PS_PER_S_F

    def headline(self) -> dict[str, Any]:
        """The summary figures (units in the keys)."""
        s = self.run.summary
        return {
            "experiment": _experiment_name(self.run),
            "mode": self.run.mode,
            "iteration_time_s": self.iteration_time_s,
            "ranks_count": int(self.ranks.height),
            "collectives_count": int(self.collectives.height),
            "flows_count": int(self.flows.height),
            "events_count": int(s.get("events_processed", 0)),
            "sim_wall_s": float(s.get("sim_wall_s", 0.0)),
        }


def _experiment_name(run: RunData) -> str:
    return str(run.manifest.get("experiment") or run.run_dir.name)


def alone_runner(cfg: Any, mode: str) -> AloneRunner:
    """The idle-fabric replay of a run: its fabric, network and engine (memo store untouched).

    ``cfg`` has the experiment's ``cluster``, ``network`` and ``sim`` sections
    (:class:`~wormsim.netsim.stage.NetsimSections`).
    """
    from wormsim.netsim.common.flow_plan import plan_flows
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.netsim.simulate import simulate

    from .alone_key import alone_key, node_make_up

    topo = build_topology(cfg.cluster)
    wormhole = cfg.sim.wormhole.model_copy(update={"memo_mode": "off", "memoize": False})
    sim = cfg.sim.model_copy(update={"mode": mode, "wormhole": wormhole})

    def run(dag: DagArrays) -> tuple[np.ndarray, np.ndarray]:
        res = simulate(dag, topo, cfg.network, sim, label="alone replay")
        return res.node_start_ps, res.node_finish_ps

    make_up = node_make_up(topo)  # once per fabric, not per instance

    def key(dag: DagArrays) -> Hashable:
        plan = plan_flows(dag, topo, routing=sim.routing, seed=sim.seed)
        return alone_key(dag, topo, plan, make_up)

    return AloneRunner(run, key)


def _trace_intervals(intervals: pl.DataFrame, run: RunData) -> pl.DataFrame:
    counts = (
        run.dag.select("kind", "op_id")  # two columns filtered, not the whole DAG
        .filter(pl.col("kind") == "flow")
        .group_by("op_id")
        .agg(pl.len().cast(pl.Int64).alias("flows_count"))
    )
    return (
        intervals.join(
            run.ops.select("op_id", "size_bytes", "layer", "microbatch"), on="op_id", how="left"
        )
        .join(counts, on="op_id", how="left")
        .with_columns(pl.col("flows_count").fill_null(0))
    )


def _us(table: pl.DataFrame) -> pl.DataFrame:
    """``*_ps`` columns as ``*_us``."""
    return table.with_columns(
        (pl.col(c) / PS_PER_US_F).alias(c.removesuffix("_ps") + "_us")
        for c in table.columns
        if c.endswith("_ps")
    ).drop(c for c in table.columns if c.endswith("_ps"))


@staged("report: analysing")
def analyse(run: RunData, alone: AloneRunner | None = None) -> Report:
    """Every table of the report.

    Parameters
    ----------
    run : the run's files (:func:`~wormsim.analysis.run_data.load_run`).
    alone : the idle-fabric replay (:func:`alone_runner`); ``None`` leaves the collectives'
        ``alone_us`` and ``slowdown_x`` out.
    """
    start = run.nodes["start_ps"].to_numpy()
    finish = run.nodes["finish_ps"].to_numpy()
    iteration = run.iteration_ps
    intervals = _trace_intervals(op_intervals(run.ops, start, finish), run)
    rank_ps = rank_breakdown_table(intervals, iteration)
    stage = dict(run.ops.group_by("rank").agg(pl.col("stage").first()).iter_rows())
    path = critical_path(run.dag, run.nodes)
    breakdown = iteration_breakdown(run.ops, start, finish, path, rank_ps)
    ranks = _us(
        rank_ps.with_columns(pl.col("rank").replace_strict(stage, default=0).alias("stage"))
    ).select("rank", "stage", pl.exclude("rank", "stage"))
    colls = collective_table(run.ops, run.dag, intervals)
    if alone is not None:
        colls = colls.join(
            alone_durations(colls, run.ops, run.dag, alone.run, alone.key), on="coll_id", how="left"
        ).with_columns(
            pl.when(pl.col("alone_us") > 0)
            .then(pl.col("duration_us") / pl.col("alone_us"))
            .alias("slowdown_x")
        )
    colls = _us(colls)
    flows = flow_table(run.flows)
    links = link_table(run.ports, iteration)
    return Report(
        run=run,
        intervals=intervals,
        breakdown=breakdown,
        ranks=ranks,
        critical_path=path,
        collectives=colls,
        flows=flows,
        flow_stats=flow_stats(flows),
        links=links,
        tiers=tier_table(links),
        slowest=slowest_rank_reason(rank_ps, stage if len(set(stage.values())) > 1 else None),
    )


def _csv_ready(df: pl.DataFrame) -> pl.DataFrame:
    """Lists (a collective's ranks) as space-separated text, since CSV has no lists."""
    return df.with_columns(
        pl.col(c).cast(pl.List(pl.String)).list.join(" ")
        for c, t in df.schema.items()
        if isinstance(t, pl.List)
    )


def collective_summary(colls: pl.DataFrame) -> pl.DataFrame:
    """The collectives per kind, group and algorithm: instances, bytes, time, busbw, slowdown."""
    aggs = [
        pl.len().cast(pl.Int64).alias("instances_count"),
        pl.col("size_bytes").mean().alias("mean_size_bytes"),
        pl.col("duration_us").sum().alias("total_us"),
        pl.col("duration_us").mean().alias("mean_us"),
        pl.col("busbw_GBps").median().alias("busbw_p50_GBps"),
    ]
    if "slowdown_x" in colls.columns:
        aggs += [
            pl.col("slowdown_x").median().alias("slowdown_p50_x"),
            pl.col("slowdown_x").max().alias("slowdown_max_x"),
        ]
    return (
        colls.group_by("collective", "group", "algorithm")
        .agg(aggs)
        .sort("total_us", descending=True)
    )


def _counters(summary: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    rename = {"events_processed": "events_count", "data_packets_sent": "data_packets_count"}
    out = {}
    for k in keys:
        if k in summary:
            name = rename.get(k, k if k.endswith(("_s", "_count")) else f"{k}_count")
            out[name] = summary[k]
    return out


def _trace_counters(run: RunData) -> dict[str, pl.DataFrame]:
    """The trace's counter tracks: utilisation per fabric tier, and the deepest switch queue
    when the run sampled queues."""
    out: dict[str, pl.DataFrame] = {}
    need = {"start_ps", "finish_ps", "size_bytes", "tier"}
    if need <= set(run.flows.columns) and {"tier", "rate_bps"} <= set(run.ports.columns):
        util = tier_utilisation(run.flows, run.ports)
        if util.height:
            out["link utilisation per tier (%)"] = util.pivot(
                on="tier", index="time_ps", values="utilisation_pct"
            )
    samples = run.run_dir / "queue_samples.parquet"
    if samples.is_file():
        how = "wormsim netsim run RUN --monitor-period-ns N"
        deepest = deepest_queue(read_parquet(samples, how))
        if deepest.height:
            out["deepest switch queue (bytes)"] = deepest
    return out


def _markdown(
    rep: Report,
    plot_files: dict[str, str],
    trace_note: str = "",
    tracks: list[str] | None = None,
    bounds: list[str] | None = None,
) -> str:
    run = rep.run
    md = [f"# wormsim report: {_experiment_name(run)}\n"]
    md.append(markdown_table(rep.headline()))
    md.append(f"\n**Slowest rank.** {rep.slowest}.\n")
    compute = run.summary.get("compute") or {}
    if compute.get("warning"):
        md.append(f"\n> **{compute['warning']}**\n")
    elif compute.get("text"):
        md.append(f"\n**Compute.** {compute['text'].removeprefix('compute: ')}.\n")
    md.append(f"\n![Per-rank timeline]({plot_files['timeline']})\n")
    md.append("\n## Where the time goes\n")
    md.append(
        "\nPer rank, compute + exposed communication per dimension + pipeline bubble + idle = the"
        " iteration; overlap is communication hidden under compute (not part of the sum). The"
        " critical path is the chain of nodes that sets the iteration time.\n\n"
    )
    md.append(markdown_table(rep.breakdown))
    cats = [f"{c}_us" for c in CATEGORIES if rep.ranks[f"{c}_us"].sum() > 0]
    per_stage = (
        rep.ranks.group_by("stage")
        .agg(pl.len().cast(pl.Int64).alias("ranks_count"), *(pl.col(c).mean() for c in cats))
        .sort("stage")
    )
    md.append("\nMean rank per pipeline stage (every rank in `ranks.csv`):\n\n")
    md.append(markdown_table(per_stage))
    md.append("\n## Collectives\n\n")
    md.append(markdown_table(collective_summary(rep.collectives)))
    md.append(
        "\nbusbw follows nccl-tests (all-reduce ×2(n−1)/n; all-gather, reduce-scatter, all-to-all"
        " ×(n−1)/n); slowdown is the duration over the same collective replayed alone on an"
        " idle fabric. One row per instance in `collectives.csv`.\n"
    )
    md.append(f"\n![Bus bandwidth per collective]({plot_files['busbw']})\n")
    md.append("\n## Flows\n\n")
    md.append(markdown_table(rep.flow_stats))
    md.append(
        "\nslowdown = FCT / ideal FCT (bytes at the path's bottleneck rate plus the base RTT, as"
        " HPCC ns-3 computes it).\n"
    )
    md.append(f"\n![FCT slowdown CDF]({plot_files['fct_cdf']})\n")
    md.append("\n## Links\n\n")
    md.append(markdown_table(rep.tiers))
    busiest = rep.links.filter(pl.col("payload_bytes") > 0).head(10)
    md.append("\nThe most loaded ports:\n\n")
    md.append(markdown_table(busiest))
    queues = rep.links.sort("peak_queue_bytes", descending=True).head(5)
    if queues.height and queues["peak_queue_bytes"][0] > 0:
        md.append("\nThe deepest queues:\n\n")
        md.append(markdown_table(queues))
    md.append(f"\n![Link utilisation by tier]({plot_files['link_utilisation']})\n")
    md.append("\n## Trace\n\n")
    md.append(
        "`trace.json` opens in ui.perfetto.dev or chrome://tracing: one process per rank (compute"
        " and communication lanes)"
        + (f", and counter tracks: {', '.join(tracks)}" if tracks else "")
        + ".\n"
    )
    if trace_note:
        md.append(f"\nThe trace is bounded: it {trace_note}.\n")
    if bounds:
        md.append("\n## Size bounds\n\nThe report stays readable at any cluster size:\n\n")
        md.append("".join(f"- {b}.\n" for b in bounds))
    md.append("\n## Engine counters\n\n")
    md.append(markdown_table(_counters(run.summary, _engine_keys())))
    if run.mode == "wormhole":
        md.append("\n## Wormhole counters\n\n")
        md.append(markdown_table(_counters(run.summary, _wormhole_keys())))
    md.append("\n## The experiment (resolved)\n\n```yaml\n")
    md.append(run.experiment_yaml.rstrip("\n") + "\n```\n")
    prov = {k: run.manifest.get(k) for k in ("commit", "config_hash", "created")}
    md.append("\n" + markdown_table({k: str(v) for k, v in prov.items() if v is not None}))
    return "".join(md)


@staged("report: writing tables and plots")
def write_report(rep: Report, out: Path | None = None) -> Path:
    """Write the report into ``out`` (default ``RUN/report``), replacing one there whole.

    Returns the report directory.
    """
    out = Path(out) if out is not None else rep.run.run_dir / REPORT_DIR
    with staged_dir(out) as stage:
        frames = {name: getattr(rep, name) for name in _TABLES}
        bounds: list[str] = []
        for name, df in frames.items():
            write_parquet(stage / f"{name}.parquet", df)
            if df.height <= REPORT_CSV_ROWS:
                write_text(stage / f"{name}.csv", _csv_ready(df).write_csv())
            else:
                bounds.append(
                    f"`{name}.csv` is not written: {df.height:,} rows, over "
                    f"{REPORT_CSV_ROWS:,}; `{name}.parquet` holds every row"
                )
        if rep.flows.height <= REPORT_FLOW_ROWS:
            write_parquet(stage / "flows.parquet", rep.flows)
        else:
            bounds.append(
                f"`flows.parquet` is not written: {rep.flows.height:,} flows, over "
                f"{REPORT_FLOW_ROWS:,}; the run's own `flows.parquet` holds every flow with its "
                "FCT and ideal FCT"
            )
        (stage / "plots").mkdir()
        files = {
            "timeline": "plots/timeline.png",
            "fct_cdf": "plots/fct_slowdown_cdf.png",
            "link_utilisation": "plots/link_utilisation.png",
            "busbw": "plots/busbw.png",
        }
        plots.plot_timeline(
            rep.intervals, stage / files["timeline"], iteration_ps=rep.run.iteration_ps
        )
        plots.plot_fct_cdf(rep.flows, stage / files["fct_cdf"])
        plots.plot_link_utilisation(rep.links, stage / files["link_utilisation"])
        plots.plot_busbw(rep.collectives, stage / files["busbw"])
        counters = _trace_counters(rep.run)
        _, _, note = bound_trace(rep.intervals, None, REPORT_TRACE_EVENTS)
        write_trace(
            rep.intervals, stage / "trace.json", counters=counters, max_events=REPORT_TRACE_EVENTS
        )
        crit = rep.ranks.sort("finish_us", "rank").row(-1, named=True)
        rank_row = {
            k.removesuffix("_us") + "_ps": int(round(v * PS_PER_US_F))
            for k, v in crit.items()
            if k.endswith("_us")
        }
        text = endtoend_csv(
            rep.intervals,
            rep.run.ops,
            rep.collectives,
            int(crit["rank"]),
            rank_row,
            _experiment_name(rep.run),
        )
        write_text(stage / "EndToEnd.csv", text)
        write_text(stage / "report.md", _markdown(rep, files, note, list(counters), bounds))
    return out
