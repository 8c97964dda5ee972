"""Compare a run against a reference: per-flow FCT error, iteration-time error, wall-time ratios
(simulation only, and end to end), and how the two runs' configurations differ.

The reference ``REF`` is either

- another run directory (e.g. the same experiment in ``packet`` mode): flows are matched by
  ``flow_id`` (the DAG node id, or the line of ``flow.txt`` for a scenario), and must agree in
  endpoints and size; or
- an HPCC ns-3 ``fct.txt`` file (:func:`wormsim.netsim.formats.hpcc_io.read_fct`, node ids from the
  IPs): ns-3 writes flows in completion order, so a line is matched to run A's flow by the key
  (``src``, ``dst``, ``size_bytes``, start time in whole ns). Flows that share a key are matched
  in order of their FCT (the fastest of run A's with the fastest of ns-3's, and so on; run A's
  unfinished flows last). ns-3 writes only finished flows, so an unfinished flow of run A may be
  absent from the file; any other flow or line without a counterpart is refused
  (:class:`CompareError`), since the two do not describe the same flows.

Units: every error figure is a percentage (0-100) under a ``_pct`` key, in the JSON and on the
console alike; times are in seconds (``_s``), the speed-up is a ratio (``_x``), counts end in
``_count`` (see :mod:`wormsim.analysis.units`). :func:`flow_errors` returns the per-flow errors
as fractions for plots. The per-flow error is ``|fct_A - fct_ref| / fct_ref``; a flow without a
finish on either side (or a reference FCT of 0) has no error and is counted in
``flows_unfinished_count`` instead.

Configuration: ``config_diff`` lists every dotted path (``parallel.tp``, ``network.cc``) whose
value differs between the runs' ``experiment.yaml`` files, as ``{key, a, b}`` records (``null``
where a run lacks the path); runs without an experiment (scenario runs) are compared by their
manifest's ``scenario`` entry (input file paths). ``config_source`` says which was compared
(``experiment``, ``scenario`` or ``null``) and ``config_note`` why nothing was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wormsim.errors import WormsimError
from wormsim.rundir import MANIFEST_FILE, read_json, read_parquet
from wormsim.units import PS_PER_NS

__all__ = ["CompareError", "compare_runs", "flow_errors", "config_diff", "flatten"]

_HOW = "wormsim netsim run"
_EXPERIMENT_FILE = "experiment.yaml"
#: The key run A's flows and ns-3's ``fct.txt`` lines are matched by (with the FCT rank).
FCT_KEY = ("src", "dst", "size_bytes", "start_ns")


class CompareError(WormsimError):
    """The run and the reference cannot be compared; the message says why."""


def _load(run_dir: Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    run_dir = Path(run_dir)
    flows, summary = run_dir / "flows.parquet", run_dir / "summary.json"
    if not flows.is_file() or not summary.is_file():
        hint = (
            f"; to compare against ns-3's output, pass its file {run_dir / 'fct.txt'}"
            if (run_dir / "fct.txt").is_file()
            else ""
        )
        raise CompareError(
            f"{run_dir} has no netsim results (flows.parquet, summary.json); run "
            f"`wormsim netsim run` or `wormsim pipeline run` first{hint}"
        )
    table = read_parquet(flows, _HOW, ["flow_id", "src", "dst", "size_bytes", "fct_ps"])
    return table, read_json(summary, _HOW)


def _same_flows(fa: pl.DataFrame, fb: pl.DataFrame) -> pl.DataFrame:
    """Join two runs' flows by id (columns ``flow_id, a, b``: FCTs in ps), refusing flows that
    are not the same transfer."""
    if fa.height != fb.height:
        raise CompareError(
            f"the runs have different flows ({fa.height} vs {fb.height}); compare two runs of "
            "the same experiment (same workload and collective settings)"
        )
    key = ["flow_id", "src", "dst", "size_bytes"]
    joined = fa.select(*key, pl.col("fct_ps").alias("a")).join(
        fb.select(*key, pl.col("fct_ps").alias("b")), on=key, how="inner"
    )
    if joined.height != fa.height:
        differ = fa.height - joined.height
        raise CompareError(
            f"{differ} of {fa.height} flows differ between the runs in id, endpoints or size: "
            "they simulate different workloads, so per-flow errors would be meaningless; "
            "compare two runs of the same experiment (they may differ in mode, network or sim)"
        )
    return joined.select("flow_id", "a", "b")


def _read_ns3_fct(path: Path) -> pl.DataFrame:
    """ns-3's ``fct.txt`` as ``src, dst, size_bytes, start_ns, fct_ns`` (Int64), line order."""
    from wormsim.netsim.errors import NetsimInputError
    from wormsim.netsim.formats.hpcc_io import read_fct

    cols = ["src", "dst", "size_bytes", "start_ns", "fct_ns"]
    try:
        table = read_fct(path)
    except NetsimInputError as exc:
        raise CompareError(
            f"{exc}; REF must be a run directory or the fct.txt ns-3 wrote (one finished flow "
            "per line: src_ip dst_ip sport dport size_bytes start_ns fct_ns standalone_fct_ns)"
        ) from None
    return table.select(pl.col(c).cast(pl.Int64) for c in cols)


def _match_ns3(run_a: Path, fct_path: Path) -> tuple[pl.DataFrame, int]:
    """Match run A's flows to ns-3's ``fct.txt`` lines (module docstring).

    Returns the matched flows (``flow_id, a, b``: FCTs in ps) and the number of run A's
    unfinished flows the file rightly leaves out.
    """
    cols = ["flow_id", "src", "dst", "size_bytes", "start_ps", "fct_ps"]
    fa = read_parquet(Path(run_a) / "flows.parquet", _HOW, cols)
    ref = _read_ns3_fct(fct_path)
    ours = (
        fa.with_columns(
            pl.col("src", "dst", "size_bytes").cast(pl.Int64),
            start_ns=pl.col("start_ps").cast(pl.Int64) // PS_PER_NS,
            done=pl.col("fct_ps") >= 0,
        )
        .sort("done", "fct_ps", "flow_id", descending=[True, False, False])
        .with_columns(tie=pl.int_range(pl.len()).over(list(FCT_KEY)))
    )
    theirs = (
        ref.with_columns(line=pl.int_range(pl.len()))
        .sort("fct_ns", "line")
        .with_columns(tie=pl.int_range(pl.len()).over(list(FCT_KEY)))
    )
    on = [*FCT_KEY, "tie"]
    joined = ours.join(theirs, on=on, how="inner")
    left_out = ours.join(theirs, on=on, how="anti")
    lost_ours = left_out.filter(pl.col("done"))
    lost_theirs = theirs.height - joined.height
    if lost_ours.height or lost_theirs:
        raise CompareError(
            f"{fct_path} and {run_a} do not describe the same flows: {lost_theirs} of the file's "
            f"{theirs.height} lines and {lost_ours.height} of the run's {fa.height} flows "
            f"(finished ones) have no counterpart with the same {', '.join(FCT_KEY)}; run "
            f"`wormsim netsim run` on the scenario's own topology.txt and flow.txt"
        )
    matched = joined.select(
        "flow_id", pl.col("fct_ps").alias("a"), (pl.col("fct_ns") * PS_PER_NS).alias("b")
    )
    return matched, left_out.height


def _matched(
    run_a: Path, ref: Path
) -> tuple[pl.DataFrame, dict[str, Any], dict[str, Any] | None, int]:
    """Run A's and the reference's FCTs (ps) per matched flow (``flow_id, a, b``, sorted by
    ``flow_id``), both summaries (``None`` for an ns-3 file), and run A's unfinished flows
    that have no counterpart (ns-3 does not write them)."""
    fa, sa = _load(run_a)
    if Path(ref).is_file():
        joined, left_out = _match_ns3(run_a, Path(ref))
        return joined.sort("flow_id"), sa, None, left_out
    fb, sb = _load(ref)
    return _same_flows(fa, fb).sort("flow_id"), sa, sb, 0


def _errors(joined: pl.DataFrame) -> np.ndarray:
    a = joined["a"].to_numpy().astype(np.float64)
    b = joined["b"].to_numpy().astype(np.float64)
    ok = (a >= 0) & (b > 0)
    err = np.full(a.shape, np.nan)
    err[ok] = np.abs(a[ok] - b[ok]) / b[ok]
    return err


def flow_errors(run_a: Path, ref: Path) -> np.ndarray:
    """Per-flow FCT error ``|fct_A - fct_ref| / fct_ref`` as fractions, in run A's ``flow_id``
    order over the matched flows; NaN where a side has no finish. ``ref`` as in
    :func:`compare_runs`.

    Raises
    ------
    CompareError
        The two do not describe the same flows, or a run directory has no netsim results.
    """
    joined, _, _, _ = _matched(run_a, ref)
    return _errors(joined)


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{dotted.path: leaf}`` (lists are leaves)."""
    out: dict[str, Any] = {}
    todo = [(prefix, data)]
    while todo:
        path, node = todo.pop()
        if isinstance(node, dict) and node:
            todo += [(f"{path}.{k}" if path else str(k), v) for k, v in node.items()]
        else:
            out[path] = node
    return dict(sorted(out.items()))


def _config_of(run_dir: Path) -> tuple[str, dict[str, Any]] | None:
    """``('experiment', mapping)`` or ``('scenario', mapping)`` of a run, or ``None``."""
    import yaml

    from wormsim.errors import ConfigError
    from wormsim.inputs import depth_guard, load_yaml, read_text

    run_dir = Path(run_dir)
    path = run_dir / _EXPERIMENT_FILE
    if path.is_file():
        try:
            data = load_yaml(read_text(path, "experiment", ConfigError, 1 << 20), str(path))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: malformed YAML ({exc}); rerun the run") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: not a mapping of sections; rerun the run")
        depth_guard(data, str(path))
        return "experiment", data
    if (run_dir / MANIFEST_FILE).is_file():
        scenario = read_json(run_dir / MANIFEST_FILE, "wormsim netsim run --force").get("scenario")
        if isinstance(scenario, dict):
            return "scenario", {"scenario": scenario}
    return None


def config_diff(run_a: Path, ref: Path) -> dict[str, Any]:
    """How two runs' configurations differ (module docstring).

    Returns
    -------
    dict
        ``config_source`` (``experiment``, ``scenario`` or ``None``), ``config_note`` (why nothing
        was compared, else ``None``) and ``config_diff``: ``[{key, a, b}]``, sorted by key.

    Raises
    ------
    ConfigError
        An ``experiment.yaml`` is damaged (the message names it).
    """
    if Path(ref).is_file():
        return {
            "config_source": None,
            "config_note": "the reference is an ns-3 fct.txt: no run configuration to compare",
            "config_diff": [],
        }
    ca, cb = _config_of(run_a), _config_of(ref)
    if ca is None or cb is None or ca[0] != cb[0]:

        def what(c: tuple[str, dict[str, Any]] | None) -> str:
            return f"a {c[0]} run" if c else f"no experiment (no {_EXPERIMENT_FILE} or scenario)"

        return {
            "config_source": None,
            "config_note": f"no experiment to compare: run A has {what(ca)}, REF {what(cb)}",
            "config_diff": [],
        }
    fa, fb = flatten(ca[1]), flatten(cb[1])
    missing = object()
    diff = [
        {"key": k, "a": fa.get(k), "b": fb.get(k)}
        for k in sorted(fa.keys() | fb.keys())
        if fa.get(k, missing) != fb.get(k, missing)
    ]
    return {"config_source": ca[0], "config_note": None, "config_diff": diff}


def _num(d: dict[str, Any] | None, key: str) -> float | None:
    v = None if d is None else d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _pct(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else 100.0 * float(x)


def _stages_wall(run_dir: Path) -> float | None:
    """The wall time of every stage the run's manifest recorded (None without a manifest)."""
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        return None
    stages = read_json(path, _HOW).get("stages", {})
    return float(sum(st.get("wall_s", 0.0) for st in stages.values())) if stages else None


def compare_runs(run_a: Path, run_b: Path) -> dict[str, Any]:
    """Error of run A against the reference ``run_b`` (a run directory or an ns-3 ``fct.txt``).

    Returns
    -------
    dict
        ``run_a``, ``run_b``, ``mode_a``, ``mode_b`` (``ns-3`` for a file); ``flows_count``
        (matched flows), ``flows_unfinished_count``; ``fct_error_mean_pct``, ``_p50_pct``,
        ``_p99_pct``, ``_max_pct`` (percent, over the flows finished on both sides);
        ``iteration_time_a_s``, ``iteration_time_b_s`` (simulated), ``iteration_time_error_pct``;
        ``sim_wall_a_s``, ``sim_wall_b_s``, ``sim_speedup_x`` (the engine's wall time only,
        ``sim_wall_s`` of ``summary.json``; B / A); ``e2e_wall_a_s``, ``e2e_wall_b_s``,
        ``e2e_speedup_x`` (end to end: every stage the manifest recorded, workload, collective
        and netsim, compile time included; B / A); and the keys of :func:`config_diff`. A
        figure a side does not have (ns-3's wall time) is ``None``. ``inputs_diff`` lists the
        input files (topology, workload, config) whose content differs between the runs or
        changed in a run directory since it ran (:mod:`wormsim.run_inputs`).

    Raises
    ------
    CompareError
        The two do not describe the same flows, or a run directory has no netsim results.
    """
    joined, sa, sb, left_out = _matched(run_a, run_b)
    err = _errors(joined)
    fin = err[np.isfinite(err)]
    unfinished = int(err.size - fin.size) + left_out

    def stat(f: Any) -> float | None:
        return _pct(float(f(fin))) if fin.size else None

    ta, tb = _num(sa, "iteration_time_s"), _num(sb, "iteration_time_s")
    wa, wb = _num(sa, "sim_wall_s"), _num(sb, "sim_wall_s")
    ea, eb = _stages_wall(run_a), _stages_wall(run_b)
    return {
        "run_a": str(run_a),
        "run_b": str(run_b),
        "mode_a": sa.get("mode"),
        "mode_b": "ns-3" if sb is None else sb.get("mode"),
        "flows_count": int(joined.height),
        "flows_unfinished_count": unfinished,
        "fct_error_mean_pct": stat(np.mean),
        "fct_error_p50_pct": stat(lambda e: np.percentile(e, 50)),
        "fct_error_p99_pct": stat(lambda e: np.percentile(e, 99)),
        "fct_error_max_pct": stat(np.max),
        "iteration_time_a_s": ta,
        "iteration_time_b_s": tb,
        "iteration_time_error_pct": _pct(abs(ta - tb) / tb) if ta is not None and tb else None,
        "sim_wall_a_s": wa,
        "sim_wall_b_s": wb,
        "sim_speedup_x": wb / wa if wa and wb is not None else None,
        "e2e_wall_a_s": ea,
        "e2e_wall_b_s": eb,
        "e2e_speedup_x": eb / ea if ea and eb is not None else None,
        **config_diff(run_a, run_b),
        "inputs_diff": _inputs_diff(run_a, run_b),
    }


def _inputs_diff(run_a: Path, run_b: Path) -> list[str]:
    """Input files that differ between the runs, or changed in a run directory since it ran."""
    from wormsim.run_inputs import changed_inputs, input_differences

    out = input_differences(run_a, run_b)
    for name, run in (("A", run_a), ("B", run_b)):
        if Path(run).is_dir():
            out += [f"run {name}: {line}" for line in changed_inputs(run)]
    return out
