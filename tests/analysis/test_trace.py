"""The Chrome/Perfetto trace: one slice per op and flow, exact times, no overlap on a thread."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.pipelines.conftest import TINY, invoke
from tests.pipelines.conftest import tiny as tiny  # the fixture
from wormsim.analysis import trace as trace_module
from wormsim.analysis.breakdown import op_intervals
from wormsim.analysis.plots import PNG_MAGIC, plot_timeline
from wormsim.analysis.trace import greedy_lanes, trace_events, write_trace

GROUPS = ["tp", "cp", "ep", "pp", "dp", "edp", "etp", "dp_cp"]


def make_intervals(n: int, ranks: int = 4, seed: int = 0) -> pl.DataFrame:
    """Intervals as the report builds them: op_intervals' columns plus the op labels."""
    rng = np.random.default_rng(seed)
    kind = np.where(rng.random(n) < 0.4, "compute", "comm")
    group = np.where(kind == "compute", "", rng.choice(GROUPS, n))
    start = rng.integers(0, 10**10, n)
    # odd picosecond values, some zero-length, some long enough to overlap many others
    end = start + rng.choice([0, 1, 999_999_937, 3 * 10**9 + 7], n)
    return pl.DataFrame(
        {
            "op_id": np.arange(n, dtype=np.int64),
            "rank": rng.integers(0, ranks, n).astype(np.int32),
            "kind": kind,
            "group": group,
            "name": np.where(kind == "compute", "mlp_fwd", "tp_attn_out"),
            "phase": rng.choice(["fwd", "bwd", "step"], n),
            "start_ps": start,
            "end_ps": end,
            "collective": np.where(kind == "compute", "", "allreduce"),
            "coll_id": np.where(kind == "compute", -1, np.arange(n)),
            "size_bytes": np.where(kind == "compute", 0, rng.integers(1, 2**30, n)),
            "flows_count": np.where(kind == "compute", 0, rng.integers(1, 8, n)),
            "layer": rng.integers(-1, 4, n).astype(np.int32),
            "microbatch": rng.integers(-1, 4, n).astype(np.int32),
        }
    )


def make_flows(n: int, ranks: int = 4, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 10**9, n)
    return pl.DataFrame(
        {
            "flow_id": np.arange(1000, 1000 + n, dtype=np.int64),
            "src": rng.integers(0, ranks, n).astype(np.int32),
            "dst": rng.integers(0, ranks, n).astype(np.int32),
            "size_bytes": rng.integers(1, 2**24, n),
            "start_ps": start,
            "finish_ps": start + rng.integers(1, 10**8, n),
            "group": rng.choice(GROUPS, n),
            "op_id": rng.integers(0, 50, n),
        }
    )


def check_trace(trace: dict, intervals: pl.DataFrame, flows: pl.DataFrame | None = None) -> None:
    """The contract every trace keeps."""
    assert trace["displayTimeUnit"] == "ns"
    events = trace["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    n_flows = 0 if flows is None else flows.height
    assert len(slices) == intervals.height + n_flows
    assert all(e["ph"] in ("X", "M") for e in events)

    # every op is one slice, at its rank, with its times to 1e-6 µs
    ops = [e for e in slices if "flow_id" not in e["args"]]
    assert sorted(e["args"]["op_id"] for e in ops) == sorted(intervals["op_id"].to_list())
    by_op = {e["args"]["op_id"]: e for e in ops}
    for row in intervals.iter_rows(named=True):
        e = by_op[row["op_id"]]
        assert e["pid"] == row["rank"]
        assert e["name"] == row["name"]
        assert abs(e["ts"] - row["start_ps"] / 1e6) <= 1e-6
        assert abs(e["dur"] - (row["end_ps"] - row["start_ps"]) / 1e6) <= 1e-6
        assert e["cat"].split(",")[0] == row["kind"]
        if row["kind"] == "comm":
            assert e["cat"] == f"comm,{row['group']}"
        for key in ("group", "collective", "size_bytes", "phase", "layer", "microbatch"):
            assert e["args"][key] == row[key]
        assert e["args"]["flows"] == row["flows_count"]

    if flows is not None:
        fl = [e for e in slices if "flow_id" in e["args"]]
        assert sorted(e["args"]["flow_id"] for e in fl) == sorted(flows["flow_id"].to_list())
        by_flow = {e["args"]["flow_id"]: e for e in fl}
        for row in flows.iter_rows(named=True):
            e = by_flow[row["flow_id"]]
            assert e["pid"] == row["src"]
            assert e["args"]["dst"] == row["dst"]
            assert e["args"]["size_bytes"] == row["size_bytes"]
            assert abs(e["ts"] - row["start_ps"] / 1e6) <= 1e-6
            assert abs(e["dur"] - (row["finish_ps"] - row["start_ps"]) / 1e6) <= 1e-6

    # no two slices of one thread overlap: the end of one <= the start of the next (in ps)
    lanes: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in slices:
        s = round(e["ts"] * 1e6)
        lanes[(e["pid"], e["tid"])].append((s, s + round(e["dur"] * 1e6)))
    for spans in lanes.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start

    # metadata names every process and thread used
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert {e["pid"] for e in slices} <= set(procs)
    assert set(lanes) <= set(threads)
    assert all(procs[p] == f"rank {p}" for p in procs)
    sort_procs = {e["pid"] for e in meta if e["name"] == "process_sort_index"}
    assert set(procs) <= sort_procs
    assert len(set(threads)) == len({tid for _, tid in threads})  # tids unique trace-wide
    for e in slices:
        name = threads[(e["pid"], e["tid"])]
        family = "flows" if "flow_id" in e["args"] else e["cat"].split(",")[0]
        assert name.startswith(family)


def test_small_hand_made_trace():
    iv = make_intervals(0).vstack(
        pl.DataFrame(
            {
                "op_id": [0, 1, 2, 3],
                "rank": [0, 0, 0, 1],
                "kind": ["compute", "comm", "comm", "comm"],
                "group": ["", "tp", "dp", "tp"],
                "name": ["attn_fwd", "tp_attn_out", "dp_grad_bucket", "tp_attn_out"],
                "phase": ["fwd", "fwd", "bwd", "fwd"],
                "start_ps": [0, 1_000_001, 1_500_000, 1_000_001],
                "end_ps": [1_000_001, 2_000_000, 3_000_003, 2_000_000],
                "collective": ["", "allreduce", "allreduce", "allreduce"],
                "coll_id": [-1, 7, 8, 7],
                "size_bytes": [0, 4096, 2**26, 4096],
                "flows_count": [0, 3, 6, 3],
                "layer": [0, 0, -1, 0],
                "microbatch": [0, 0, -1, 0],
            },
            schema=make_intervals(0).schema,
        )
    )
    trace = trace_events(iv)
    check_trace(trace, iv)
    names = {
        (e["pid"], e["args"]["name"])
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    # the TP and DP all-reduces of rank 0 overlap: two comm lanes; rank 1 needs one
    assert names == {(0, "compute"), (0, "comm 0"), (0, "comm 1"), (1, "comm 0")}
    x = {e["args"]["op_id"]: e for e in trace["traceEvents"] if e["ph"] == "X"}
    assert x[0]["ts"] == 0.0 and x[0]["dur"] == 1.000001
    assert x[2]["ts"] == 1.5 and x[2]["dur"] == 1.500003
    assert x[1]["args"]["collective"] == "allreduce" and x[1]["args"]["flows"] == 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_intervals_and_flows(seed):
    iv = make_intervals(3000, ranks=5, seed=seed)
    fl = make_flows(2000, ranks=6, seed=seed)  # rank 5 sends flows but has no ops
    check_trace(trace_events(iv), iv)
    check_trace(trace_events(iv, flows=fl), iv, fl)


def test_empty_inputs():
    iv = make_intervals(0)
    assert trace_events(iv) == {"traceEvents": [], "displayTimeUnit": "ns"}
    fl = make_flows(5)
    check_trace(trace_events(iv, flows=fl), iv, fl)
    check_trace(trace_events(make_intervals(4), flows=make_flows(0)), make_intervals(4))


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="end_ps"):
        trace_events(make_intervals(3).drop("end_ps"))


def test_times_exact_to_the_picosecond():
    big = 7 * 10**12 + 123_457  # 7 s and an odd number of picoseconds
    iv = make_intervals(1).with_columns(
        pl.lit(big, pl.Int64).alias("start_ps"), pl.lit(big + 1, pl.Int64).alias("end_ps")
    )
    (e,) = [e for e in trace_events(iv)["traceEvents"] if e["ph"] == "X"]
    assert round(e["ts"] * 1e6) == big
    assert e["dur"] == 1e-6


def test_unfinished_flow_gets_zero_duration():
    fl = make_flows(2).with_columns(pl.lit(-1, pl.Int64).alias("finish_ps"))
    xs = [e for e in trace_events(make_intervals(0), flows=fl)["traceEvents"] if e["ph"] == "X"]
    assert [e["dur"] for e in xs] == [0.0, 0.0]


def test_greedy_lanes_are_disjoint_and_as_few_as_the_deepest_overlap():
    rng = np.random.default_rng(3)
    start = rng.integers(0, 1000, 500)
    end = start + rng.integers(0, 100, 500)
    lanes = greedy_lanes(start, end)
    for lane in np.unique(lanes):
        s, e = start[lanes == lane], end[lanes == lane]
        o = np.lexsort((e, s))
        assert np.all(e[o][:-1] <= s[o][1:])
    # deepest overlap: most intervals covering one instant (touching ones do not overlap)
    points = sorted([(int(a), 1) for a, b in zip(start, end, strict=True) if b > a])
    points += [(int(b), -1) for a, b in zip(start, end, strict=True) if b > a]
    depth = best = 0
    for _, d in sorted(points, key=lambda p: (p[0], p[1])):
        depth += d
        best = max(best, depth)
    assert lanes.max() + 1 == max(best, 1)


@pytest.mark.parametrize("chunk", [7, 10_000])
def test_write_trace_is_valid_json_and_atomic(tmp_path: Path, monkeypatch, chunk):
    monkeypatch.setattr(trace_module, "_CHUNK_EVENTS", chunk)  # chunk boundaries inside
    iv = make_intervals(500, seed=4)
    fl = make_flows(300, seed=4)
    path = write_trace(iv, tmp_path / "sub" / "trace.json", flows=fl)
    assert path == tmp_path / "sub" / "trace.json"
    trace = json.loads(path.read_text(encoding="utf-8"))
    check_trace(trace, iv, fl)
    assert trace == json.loads(json.dumps(trace_events(iv, flows=fl)))
    assert [p.name for p in path.parent.iterdir()] == ["trace.json"]  # no temporary left
    empty = json.loads(write_trace(make_intervals(0), tmp_path / "empty.json").read_text())
    assert empty == {"displayTimeUnit": "ns", "traceEvents": []}


def _run_intervals(run: Path) -> pl.DataFrame:
    """Intervals of a run as the report builds them (ops + nodes tables)."""
    ops = pl.read_parquet(run / "ops.parquet")
    nodes = pl.read_parquet(run / "nodes.parquet").sort("node_id")
    iv = op_intervals(ops, nodes["start_ps"].to_numpy(), nodes["finish_ps"].to_numpy())
    counts = (
        nodes.filter(pl.col("kind") == "flow")
        .group_by("op_id")
        .agg(pl.len().cast(pl.Int64).alias("flows_count"))
    )
    labels = ops.select("op_id", "collective", "coll_id", "size_bytes", "layer", "microbatch")
    return (
        iv.join(labels, on="op_id", how="left")
        .join(counts, on="op_id", how="left")
        .with_columns(pl.col("flows_count").fill_null(0))
        .sort("op_id")
    )


def test_trace_and_timeline_of_a_tiny_run(tmp_path: Path):
    import yaml

    exp = tmp_path / "tiny.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    run = tmp_path / "run"
    result = invoke("pipeline", "run", exp, "-o", run)
    assert result.exit_code == 0, result.output
    iv = _run_intervals(run)
    ops = pl.read_parquet(run / "ops.parquet")
    assert iv.height == ops.height
    assert iv["flows_count"].sum() > 0

    flows = pl.read_parquet(run / "flows.parquet")
    trace = json.loads(write_trace(iv, tmp_path / "trace.json", flows=flows).read_text())
    check_trace(trace, iv, flows)
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X" and "flow_id" not in e["args"]]
    assert sorted(e["args"]["op_id"] for e in slices) == ops["op_id"].to_list()

    png = plot_timeline(iv, tmp_path / "timeline.png", iteration_ps=int(iv["end_ps"].max()))
    assert png.read_bytes()[:8] == PNG_MAGIC


# ------------------------------------------------------------------ bound and counters
#: Keys every event of a phase must carry in the Chrome trace-event format (JSON object form).
_REQUIRED = {
    "X": {"name", "ph", "pid", "tid", "ts", "dur"},
    "M": {"name", "ph", "pid", "args"},
    "C": {"name", "ph", "pid", "ts", "args"},
    "i": {"name", "ph", "pid", "ts", "s"},
}


def _valid_chrome_trace(trace: dict) -> None:
    """The trace follows the Chrome trace-event format that Perfetto imports: each event's phase
    is known and carries that phase's keys, numbers where numbers go, counters numeric."""
    assert isinstance(trace["traceEvents"], list)
    for e in trace["traceEvents"]:
        assert _REQUIRED[e["ph"]] <= set(e), e
        assert isinstance(e["pid"], int)
        if "ts" in e:
            assert isinstance(e["ts"], float) and e["ts"] >= 0
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, int | float) for v in e["args"].values())


def test_a_trace_over_its_bound_leaves_flows_then_ranks_out_and_says_so(tmp_path):
    iv = make_intervals(400, ranks=8)
    flows = pl.DataFrame(
        {
            "flow_id": np.arange(50),
            "src": np.arange(50) % 8,
            "dst": (np.arange(50) + 1) % 8,
            "size_bytes": np.full(50, 1000),
            "start_ps": np.zeros(50, np.int64),
            "finish_ps": np.full(50, 10**6),
        }
    )
    whole = trace_module.trace_events(iv, flows=flows)
    assert "otherData" not in whole
    no_flows = trace_module.trace_events(iv, flows=flows, max_events=420)
    assert "all 50 flow slices" in no_flows["otherData"]["wormsim_note"]
    assert sum(e["ph"] == "X" for e in no_flows["traceEvents"]) == 400
    small = trace_module.trace_events(iv, flows=flows, max_events=120)
    note = small["otherData"]["wormsim_note"]
    slices = [e for e in small["traceEvents"] if e["ph"] == "X"]
    assert len(slices) <= 120 + 400 // 8  # whole ranks are kept, so about the bound
    assert "ranks" in note and "evenly spread" in note
    kept = {e["pid"] for e in slices}
    assert 0 in kept and 7 in kept and len(kept) < 8
    marks = [e for e in small["traceEvents"] if e["ph"] == "i"]
    assert marks and marks[0]["args"]["note"] == note
    _valid_chrome_trace(small)
    path = trace_module.write_trace(iv, tmp_path / "t.json", flows=flows, max_events=120)
    assert json.loads(path.read_text()) == json.loads(json.dumps(small))  # same, streamed


def test_counter_tracks_are_in_the_trace():
    iv = make_intervals(20)
    util = pl.DataFrame({"time_ps": [0, 10**6], "host→leaf": [10.0, 55.5]})
    trace = trace_module.trace_events(iv, counters={"link utilisation per tier (%)": util})
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert [(e["ts"], e["args"]["host→leaf"]) for e in counters] == [(0.0, 10.0), (1.0, 55.5)]
    fabric = {e["pid"] for e in counters}
    names = {
        e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"
    }
    assert [names[p] for p in fabric] == ["fabric"]
    _valid_chrome_trace(trace)


def test_a_report_trace_is_a_valid_chrome_trace_with_utilisation_counters(tmp_path, tiny):
    r = invoke("pipeline", "run", tiny, "-o", tmp_path / "run", "--mode", "flow")
    assert r.exit_code == 0, r.output
    trace = json.loads((tmp_path / "run" / "report" / "trace.json").read_text())
    _valid_chrome_trace(trace)
    tracks = {e["name"] for e in trace["traceEvents"] if e["ph"] == "C"}
    assert "link utilisation per tier (%)" in tracks
