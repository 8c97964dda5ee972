"""Run the bundled default experiment from Python and look at where its time goes.

    .venv/bin/python examples/run_from_python.py

Everything `wormsim pipeline run` prints and writes is on the returned `Run` as polars frames
(column names carry their units); nothing is left on disk unless `out=` is given.
"""

from pathlib import Path

import polars as pl

import wormsim

HERE = Path(__file__).resolve().parent

# The same experiment twice in the flow engine (fast): as bundled, then with a pipeline twice as
# deep. mode="packet" (the default of the file) or "wormhole" run the packet engine.
base = wormsim.run(HERE / "default.yaml", mode="flow")
deeper = wormsim.run(HERE / "default.yaml", mode="flow", overrides={"parallel.pp": 4})

for name, run in (("pp=2", base), ("pp=4", deeper)):
    print(f"{name}: one iteration takes {run.iteration_time_s * 1e3:.2f} ms")
    print(f"  {run.slowest_rank}")
print(base.breakdown)

# The collectives that cost most in total, with their bus bandwidth and contention slowdown.
print(
    base.collectives.group_by("collective", "group")
    .agg(
        pl.len().alias("instances_count"),
        pl.col("duration_us").sum().alias("total_us"),
        pl.col("busbw_GBps").median().alias("busbw_p50_GBps"),
        pl.col("slowdown_x").max().alias("slowdown_max_x"),
    )
    .sort("total_us", descending=True)
)

# The full report (report.md, tables, plots, trace.json, EndToEnd.csv) on request.
print("report:", base.report(Path("runs") / "default-flow-report") / "report.md")
