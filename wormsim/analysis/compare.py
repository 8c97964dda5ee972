"""Compare two runs of the same experiment: per-flow FCT error, iteration-time error, wall ratio.

Run A is measured against run B (the reference, e.g. ``packet`` mode): per-flow relative error
``|fct_A - fct_B| / fct_B`` over flows matched by ``flow_id`` (the DAG node id, identical when the
two runs expanded the same experiment).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wormsim.errors import WormsimError
from wormsim.rundir import read_json, read_parquet

__all__ = ["CompareError", "compare_runs"]


class CompareError(WormsimError):
    """The two run directories cannot be compared; the message says why."""


def _load(run_dir: Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    run_dir = Path(run_dir)
    flows, summary = run_dir / "flows.parquet", run_dir / "summary.json"
    if not flows.is_file() or not summary.is_file():
        raise CompareError(
            f"{run_dir} has no netsim results (flows.parquet, summary.json); run "
            "`wormsim netsim run` or `wormsim pipeline run` first"
        )
    how = "wormsim netsim run"
    table = read_parquet(flows, how, ["flow_id", "src", "dst", "size_bytes", "fct_ps"])
    return table, read_json(summary, how)


def _same_flows(fa: pl.DataFrame, fb: pl.DataFrame) -> pl.DataFrame:
    """Join the two runs' flows by id, refusing flows that are not the same transfer."""
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
    return joined


def compare_runs(run_a: Path, run_b: Path) -> dict[str, Any]:
    """Error of run A against reference run B.

    Returns
    -------
    dict
        ``flows``, ``fct_error_mean``, ``fct_error_p50``, ``fct_error_p99``, ``fct_error_max``
        (fractions), ``iteration_time_a_s``, ``iteration_time_b_s``, ``iteration_time_error``,
        ``wall_a_s``, ``wall_b_s``, ``speedup`` (wall B / wall A), the two modes.
    """
    fa, sa = _load(run_a)
    fb, sb = _load(run_b)
    joined = _same_flows(fa, fb)
    a = joined["a"].to_numpy().astype(np.float64)
    b = joined["b"].to_numpy().astype(np.float64)
    ok = b > 0
    err = np.abs(a[ok] - b[ok]) / b[ok] if ok.any() else np.zeros(1)
    ta = float(sa.get("iteration_time_s", np.nan))
    tb = float(sb.get("iteration_time_s", np.nan))
    wa, wb = float(sa.get("sim_wall_s", np.nan)), float(sb.get("sim_wall_s", np.nan))
    return {
        "run_a": str(run_a),
        "run_b": str(run_b),
        "mode_a": sa.get("mode"),
        "mode_b": sb.get("mode"),
        "flows": int(joined.height),
        "fct_error_mean": float(err.mean()),
        "fct_error_p50": float(np.percentile(err, 50)),
        "fct_error_p99": float(np.percentile(err, 99)),
        "fct_error_max": float(err.max()),
        "iteration_time_a_s": ta,
        "iteration_time_b_s": tb,
        "iteration_time_error": abs(ta - tb) / tb if tb else float("nan"),
        "wall_a_s": wa,
        "wall_b_s": wb,
        "speedup": wb / wa if wa else float("nan"),
    }
