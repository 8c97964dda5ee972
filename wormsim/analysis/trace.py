"""The iteration as a Chrome trace-event file, for ui.perfetto.dev and chrome://tracing.

:func:`trace_events` turns the per-op intervals of
:func:`wormsim.analysis.breakdown.op_intervals` (plus label columns, below) into the JSON
trace-event format, ``{"traceEvents": [...], "displayTimeUnit": "ns"}``; :func:`write_trace`
streams the same events to a file atomically.

Layout
------
- Every rank is a process: ``pid`` = rank, named ``"rank N"`` (``process_name``) and sorted by
  rank (``process_sort_index``).
- Every op is one complete event (``"ph": "X"``) with ``ts`` and ``dur`` in microseconds as
  floats (the picosecond values divided by 10⁶, so exact to the picosecond as far as a float64
  allows: below 2⁵³ ps, about 2.5 hours). ``cat`` is the comma-separated category list the
  format defines: ``"compute"``, or ``"comm,<group>"`` (``"flow,<group>"`` for flows), so the
  viewers can filter by kind and by group.
- Threads are *lanes*. Perfetto mis-draws complete events of one thread that overlap only
  partly, and the communication ops of a rank do overlap (a DP bucket all-reduce during a TP
  all-reduce), so each rank's events of one family (``compute``, ``comm``, ``flows``) are laid out
  by greedy interval partitioning (:func:`greedy_lanes`): in start order, each event takes the
  lowest-numbered lane that is free by its start (the previous event there ended at or before it),
  else a new lane. That uses as few lanes as the deepest overlap needs, and keeps lane 0 the
  busiest. Lanes are named ``"compute"`` (further ones ``"compute 1"``, … should compute ever
  overlap), ``"comm 0"``, ``"comm 1"``, … and ``"flows 0"``, … One thread per group was
  considered and not chosen: ops of one group overlap too (DP buckets), so it would need sub-lanes
  anyway, and it would spread a rank over up to eight mostly empty rows.
- Thread ids are unique over the whole trace (``tid = rank * stride + lane``, ``stride`` a power
  of ten above the most lanes any rank has), since some importers key threads by ``tid`` alone.
  ``thread_sort_index`` orders each rank's lanes compute, comm, flows.
- An event whose end lies before its start (an unfinished flow, ``finish_ps`` = −1) gets
  ``dur`` 0.
- Counter tracks (``"ph": "C"``) live in a process ``fabric`` listed first: link utilisation
  per tier and the deepest switch queue over time (:mod:`wormsim.analysis.counters`).
- Size bound: at most ``max_events`` op and flow slices (:data:`MAX_EVENTS`, about 250 MB of
  JSON; Perfetto's UI fails on JSON traces near 1 GB). Past it the flows are left out first,
  then the ops of evenly spread ranks are kept (first and last rank included); what was left
  out is said in ``otherData.wormsim_note`` and in an instant event at time 0 of ``fabric``.

>>> import polars as pl
>>> iv = pl.DataFrame({"op_id": [0, 1, 2], "rank": [0, 0, 0], "kind": ["compute", "comm", "comm"],
...     "group": ["", "tp", "dp"], "name": ["attn_fwd", "tp_attn_out", "dp_grad_bucket"],
...     "phase": ["fwd", "fwd", "bwd"], "start_ps": [0, 1_000_000, 1_500_000],
...     "end_ps": [1_000_000, 2_000_000, 3_000_000]})
>>> ev = [e for e in trace_events(iv)["traceEvents"] if e["ph"] == "X"]
>>> [(e["name"], e["ts"], e["dur"]) for e in ev]
[('attn_fwd', 0.0, 1.0), ('tp_attn_out', 1.0, 1.0), ('dp_grad_bucket', 1.5, 1.5)]
>>> len({e["tid"] for e in ev})  # compute, comm 0, comm 1 (the two all-reduces overlap)
3
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wormsim.rundir import atomic_write

__all__ = [
    "INTERVAL_COLUMNS",
    "FLOW_COLUMNS",
    "OP_ARGS",
    "MAX_EVENTS",
    "greedy_lanes",
    "bound_trace",
    "trace_events",
    "write_trace",
]

#: Columns ``intervals`` must have.
INTERVAL_COLUMNS = ("op_id", "rank", "kind", "name", "start_ps", "end_ps")
#: Columns ``flows`` must have.
FLOW_COLUMNS = ("flow_id", "src", "dst", "size_bytes", "start_ps", "finish_ps")
#: ``args`` key of an op event -> the ``intervals`` column it comes from (used when present).
OP_ARGS: dict[str, str] = {
    "op_id": "op_id",
    "group": "group",
    "collective": "collective",
    "coll_id": "coll_id",
    "size_bytes": "size_bytes",
    "flows": "flows_count",
    "phase": "phase",
    "layer": "layer",
    "microbatch": "microbatch",
}
_FLOW_ARGS: dict[str, str] = {
    "flow_id": "flow_id",
    "dst": "dst",
    "size_bytes": "size_bytes",
    "op_id": "op_id",
    "group": "group",
}
#: Families of lanes, in the order a rank's threads are listed.
_FAMILIES = ("compute", "comm", "flows")
_PS_PER_US = 1e6
#: Events encoded before one write: memory stays bounded, writes stay few.
_CHUNK_EVENTS = 10_000
#: Most op and flow slices a trace holds (about 250 bytes of JSON each).
MAX_EVENTS = 1_000_000


def greedy_lanes(start: np.ndarray, end: np.ndarray, key: np.ndarray | None = None) -> np.ndarray:
    """Lane of every interval ``[start, end)`` so that no two intervals of one lane overlap.

    Greedy interval partitioning: in order of start (then end), an interval takes the lowest
    lane free at its start, else opens a new one; this opens as many lanes as the deepest overlap.
    Intervals of different ``key`` (e.g. rank) get lanes independently. Touching intervals
    (one ends where the next starts) share a lane.

    >>> greedy_lanes(np.array([0, 5, 10, 12]), np.array([10, 12, 20, 13])).tolist()
    [0, 1, 0, 1]
    """
    start = np.asarray(start, dtype=np.int64)
    end = np.maximum(np.asarray(end, dtype=np.int64), start)
    n = start.shape[0]
    keys = np.zeros(n, dtype=np.int64) if key is None else np.asarray(key, dtype=np.int64)
    lanes = np.empty(n, dtype=np.int64)
    if n == 0:
        return lanes
    order = np.lexsort((end, start, keys))
    s_l, e_l, k_l = start[order].tolist(), end[order].tolist(), keys[order].tolist()
    out = [0] * n
    busy: list[tuple[int, int]] = []  # (end, lane) of occupied lanes
    free: list[int] = []  # lanes free again
    opened = 0
    current = None
    for i in range(n):
        if k_l[i] != current:
            current, busy, free, opened = k_l[i], [], [], 0
        s = s_l[i]
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, opened = opened, opened + 1
        heapq.heappush(busy, (e_l[i], lane))
        out[i] = lane
    lanes[order] = out
    return lanes


def _check(df: pl.DataFrame, need: tuple[str, ...], what: str) -> None:
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks the column(s) {', '.join(missing)}")


def _column(df: pl.DataFrame, col: str) -> list[Any]:
    return df[col].to_list()


def _family_code(kind: pl.Series) -> np.ndarray:
    return np.where((kind.cast(pl.String) == "compute").fill_null(False).to_numpy(), 0, 1)


def _thread_name(family: int, lane: int) -> str:
    name = _FAMILIES[family]
    if family == 0:
        return "compute" if lane == 0 else f"compute {lane}"
    return f"{name} {lane}"


class _Layout:
    """Lanes of every event (ops and flows together) and the thread ids they become."""

    def __init__(self, pid: np.ndarray, family: np.ndarray, start: np.ndarray, end: np.ndarray):
        self.pid = pid.astype(np.int64)
        self.family = family.astype(np.int64)
        self.lane = greedy_lanes(start, end, self.pid * len(_FAMILIES) + self.family)
        lanes = (
            pl.DataFrame({"pid": self.pid, "family": self.family, "lane": self.lane})
            .group_by("pid", "family")
            .agg(n=pl.col("lane").max() + 1)
            .sort("pid", "family")
            .with_columns(offset=(pl.col("n").cum_sum() - pl.col("n")).over("pid"))
        )
        #: (pid, family) -> (lanes, lanes of the rank's earlier families)
        self.lanes: dict[tuple[int, int], tuple[int, int]] = {
            (p, f): (n, o) for p, f, n, o in lanes.iter_rows()
        }
        most = lanes.group_by("pid").agg(pl.col("n").sum())["n"].max() if lanes.height else 0
        self.stride = 10
        while self.stride <= (most or 0):
            self.stride *= 10

    def tids(self) -> np.ndarray:
        """Thread id of every event: ``pid * stride + 1 + offset of its family + lane``."""
        if self.pid.shape[0] == 0:
            return np.empty(0, dtype=np.int64)
        table = pl.DataFrame(
            [(p, f, o) for (p, f), (_, o) in self.lanes.items()],
            schema={"pid": pl.Int64, "family": pl.Int64, "offset": pl.Int64},
            orient="row",
        )
        off = (
            pl.DataFrame({"pid": self.pid, "family": self.family})
            .join(table, on=["pid", "family"], how="left", maintain_order="left")["offset"]
            .to_numpy()
        )
        return self.pid * self.stride + 1 + off + self.lane

    def metadata(self) -> Iterator[dict[str, Any]]:
        """``process_name``/``process_sort_index`` per rank, ``thread_name``/``thread_sort_index``
        per lane."""
        for p in sorted({p for p, _ in self.lanes}):
            yield {"ph": "M", "name": "process_name", "pid": p, "args": {"name": f"rank {p}"}}
            yield {"ph": "M", "name": "process_sort_index", "pid": p, "args": {"sort_index": p}}
        for (p, f), (n, offset) in sorted(self.lanes.items()):
            for lane in range(n):
                local = 1 + offset + lane
                tid = p * self.stride + local
                name = _thread_name(f, lane)
                yield {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": p,
                    "tid": tid,
                    "args": {"name": name},
                }
                yield {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": p,
                    "tid": tid,
                    "args": {"sort_index": local},
                }


def _complete(
    names: list[Any],
    cats: list[str],
    pid: np.ndarray,
    tid: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    args: dict[str, list[Any]],
) -> Iterator[dict[str, Any]]:
    """Complete events, ordered by thread and start."""
    start = np.asarray(start, dtype=np.int64)
    dur_ps = np.maximum(np.asarray(end, dtype=np.int64) - start, 0)
    ts = (start.astype(np.float64) / _PS_PER_US).tolist()
    dur = (dur_ps.astype(np.float64) / _PS_PER_US).tolist()
    pids, tids = pid.tolist(), tid.tolist()
    keys = list(args)
    cols = [args[k] for k in keys]
    for i in np.lexsort((start, tid)).tolist():
        yield {
            "name": names[i],
            "cat": cats[i],
            "ph": "X",
            "pid": pids[i],
            "tid": tids[i],
            "ts": ts[i],
            "dur": dur[i],
            "args": {k: c[i] for k, c in zip(keys, cols, strict=True)},
        }


def bound_trace(
    intervals: pl.DataFrame, flows: pl.DataFrame | None, max_events: int = MAX_EVENTS
) -> tuple[pl.DataFrame, pl.DataFrame | None, str]:
    """The ops and flows a trace of at most ``max_events`` slices keeps, and a note of what it
    leaves out (empty when everything fits): flows go first, then ranks (evenly spread)."""
    n_flows = 0 if flows is None else flows.height
    if intervals.height + n_flows <= max_events:
        return intervals, flows, ""
    note = f"left out all {n_flows:,} flow slices" if n_flows else ""
    if intervals.height <= max_events:
        return intervals, None, note + f" (the trace holds at most {max_events:,} slices)"
    from .plots import select_ranks

    ranks = np.unique(intervals["rank"].to_numpy())
    per_rank = intervals.height / max(ranks.shape[0], 1)
    keep = select_ranks(ranks, max(int(max_events // max(per_rank, 1)), 1))
    kept = intervals.filter(pl.col("rank").is_in(keep.tolist()))
    dropped = intervals.height - kept.height
    note += (", and " if note else "left out ") + (
        f"the ops of {ranks.shape[0] - keep.shape[0]:,} of {ranks.shape[0]:,} ranks "
        f"({dropped:,} slices; {keep.shape[0]:,} evenly spread ranks are kept, first and last "
        f"included) to stay within {max_events:,} slices"
    )
    return kept, None, note


def _counter_events(counters: dict[str, pl.DataFrame], pid: int) -> Iterator[dict[str, Any]]:
    """``"C"`` events of every counter track: ``time_ps`` and one column per series."""
    for name, frame in counters.items():
        series = [c for c in frame.columns if c != "time_ps"]
        ts = (frame["time_ps"].cast(pl.Float64) / _PS_PER_US).to_list()
        cols = [frame[c].to_list() for c in series]
        for i, t in enumerate(ts):
            args = {k: c[i] for k, c in zip(series, cols, strict=True)}
            yield {"name": name, "ph": "C", "pid": pid, "ts": t, "args": args}


def _events(
    intervals: pl.DataFrame,
    flows: pl.DataFrame | None,
    counters: dict[str, pl.DataFrame] | None = None,
    note: str = "",
) -> Iterator[dict[str, Any]]:
    """Every event of the trace: metadata first, then the counters, the ops' and the flows'
    slices."""
    _check(intervals, INTERVAL_COLUMNS, "intervals")
    if flows is not None:
        _check(flows, FLOW_COLUMNS, "flows")
    else:
        flows = pl.DataFrame(schema={c: pl.Int64 for c in FLOW_COLUMNS})
    n_ops = intervals.height
    op_start = intervals["start_ps"].cast(pl.Int64).to_numpy()
    op_end = intervals["end_ps"].cast(pl.Int64).to_numpy()
    fl_start = flows["start_ps"].cast(pl.Int64).to_numpy()
    fl_end = flows["finish_ps"].cast(pl.Int64).to_numpy()
    layout = _Layout(
        np.concatenate(
            (intervals["rank"].cast(pl.Int64).to_numpy(), flows["src"].cast(pl.Int64).to_numpy())
        ),
        np.concatenate((_family_code(intervals["kind"]), np.full(flows.height, 2))),
        np.concatenate((op_start, fl_start)),
        np.concatenate((op_end, fl_end)),
    )
    tid = layout.tids()
    yield from layout.metadata()
    if counters or note:
        fabric = int(layout.pid.max(initial=-1)) + 1
        yield {"ph": "M", "name": "process_name", "pid": fabric, "args": {"name": "fabric"}}
        yield {"ph": "M", "name": "process_sort_index", "pid": fabric, "args": {"sort_index": -1}}
        if note:
            yield {
                "name": "trace bounded",
                "ph": "i",
                "s": "g",
                "pid": fabric,
                "tid": 0,
                "ts": 0.0,
                "args": {"note": note},
            }
        yield from _counter_events(counters or {}, fabric)

    kinds = intervals["kind"].cast(pl.String).fill_null("").to_list()
    groups = (
        intervals["group"].cast(pl.String).fill_null("").to_list()
        if "group" in intervals.columns
        else [""] * n_ops
    )
    cats = [
        k if k == "compute" or not g else f"{k},{g}" for k, g in zip(kinds, groups, strict=True)
    ]
    args = {k: _column(intervals, c) for k, c in OP_ARGS.items() if c in intervals.columns}
    yield from _complete(
        _column(intervals, "name"),
        cats,
        layout.pid[:n_ops],
        tid[:n_ops],
        op_start,
        op_end,
        args,
    )
    if flows.height == 0:
        return
    fgroups = (
        flows["group"].cast(pl.String).fill_null("").to_list()
        if "group" in flows.columns
        else [""] * flows.height
    )
    src, dst = flows["src"].to_list(), flows["dst"].to_list()
    names = [f"flow {s}→{d}" for s, d in zip(src, dst, strict=True)]
    fcats = [f"flow,{g}" if g else "flow" for g in fgroups]
    fargs = {k: _column(flows, c) for k, c in _FLOW_ARGS.items() if c in flows.columns}
    yield from _complete(names, fcats, layout.pid[n_ops:], tid[n_ops:], fl_start, fl_end, fargs)


def trace_events(
    intervals: pl.DataFrame,
    *,
    flows: pl.DataFrame | None = None,
    counters: dict[str, pl.DataFrame] | None = None,
    max_events: int = MAX_EVENTS,
) -> dict[str, Any]:
    """The trace as a JSON-ready object ``{"traceEvents": [...], "displayTimeUnit": "ns"}``.

    Parameters
    ----------
    intervals : polars.DataFrame
        One row per op: :data:`INTERVAL_COLUMNS` (``op_id, rank, kind, name, start_ps,
        end_ps``), and, used as ``args`` when present, ``group, collective, coll_id,
        size_bytes, flows_count, phase, layer, microbatch`` (:data:`OP_ARGS`).
    flows : polars.DataFrame, optional
        One row per flow: :data:`FLOW_COLUMNS` (``flow_id, src, dst, size_bytes, start_ps,
        finish_ps``), optionally ``group`` and ``op_id``. Each flow becomes a slice on its source
        rank's ``flows`` lanes.
    counters : dict of str to polars.DataFrame, optional
        Counter tracks: name -> ``time_ps`` and one numeric column per series.
    max_events : int
        The size bound (:func:`bound_trace`).

    Returns
    -------
    dict
        Metadata events (process and thread names and order), the counters, then one ``"X"``
        event per op and per flow; ``otherData.wormsim_note`` says what the bound left out.
        See the module docstring for the layout.

    Raises
    ------
    ValueError
        A required column is missing.
    """
    intervals, flows, note = bound_trace(intervals, flows, max_events)
    out = {"traceEvents": list(_events(intervals, flows, counters, note)), "displayTimeUnit": "ns"}
    if note:
        out["otherData"] = {"wormsim_note": note}
    return out


def write_trace(
    intervals: pl.DataFrame,
    path: Path | str,
    *,
    flows: pl.DataFrame | None = None,
    counters: dict[str, pl.DataFrame] | None = None,
    max_events: int = MAX_EVENTS,
) -> Path:
    """Write the trace of :func:`trace_events` as JSON at ``path`` atomically; returns the path
    (:func:`bound_trace` says what the size bound leaves out).

    Events are written one at a time, so the file is never held in memory as one string.
    """
    intervals, flows, note = bound_trace(intervals, flows, max_events)

    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def writer(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            head = {"displayTimeUnit": "ns"}
            if note:
                head["otherData"] = {"wormsim_note": note}
            f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "traceEvents": [\n')
            sep = ""
            chunk: list[str] = []
            for event in _events(intervals, flows, counters, note):
                chunk.append(encode(event))
                if len(chunk) == _CHUNK_EVENTS:
                    f.write(sep + ",\n".join(chunk))
                    sep, chunk = ",\n", []
            if chunk:
                f.write(sep + ",\n".join(chunk))
            f.write("\n]}\n")

    return atomic_write(Path(path), writer)
