"""``wormsim netsim …``: run a run directory's DAG, or an HPCC-format scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(help="Stage 3: the network simulation (packet, flow).", no_args_is_help=True)


@app.callback()
def _main() -> None:
    """Stage 3: the network simulation (packet, flow)."""


@app.command("run")
def run(
    run_dir: Annotated[Path | None, typer.Argument(help="Run directory with dag.parquet.")] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="packet | wormhole | flow")] = None,
    topology: Annotated[Path | None, typer.Option("--topology", help="HPCC topology.txt")] = None,
    flows: Annotated[Path | None, typer.Option("--flows", help="HPCC flow.txt")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="HPCC config.txt")] = None,
    cc: Annotated[str | None, typer.Option("--cc", help="dcqcn|hpcc|timely|dctcp")] = None,
    routing: Annotated[str, typer.Option("--routing", help="ns3|hash (scenarios)")] = "ns3",
    seed: Annotated[int, typer.Option("--seed", help="ECMP/RED seed (scenarios)")] = 0,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Output dir (scenarios)")] = None,
    monitor_period_ns: Annotated[
        int, typer.Option("--monitor-period-ns", help="Sample flow rates and switch queues (0=off)")
    ] = 0,
) -> None:
    """Simulate a run directory (writes flows.parquet, nodes.parquet, summary.json), or an
    HPCC-format scenario given by --topology/--flows[/--config] (writes fct.txt too, into -o)."""
    from wormsim.clikit import fail, user_errors

    if run_dir is not None:
        if topology or flows or config or out:
            fail("give either a RUN_DIR or --topology/--flows/-o, not both")
        from wormsim.pipelines.stages import read_dag, stage_netsim
        from wormsim.progress import engine_progress

        with user_errors():
            n = read_dag(run_dir).height
            with engine_progress(n, f"{mode or 'configured'} mode") as progress:
                summary = stage_netsim(run_dir, mode, progress, monitor_period_ns)
        typer.echo(
            f"iteration time {summary['iteration_time_s']:.6f} s ({summary['mode']} mode, "
            f"{summary['sim_wall_s']:.2f} s wall); wrote {run_dir}"
        )
        return
    if topology is None or flows is None or out is None:
        fail("give a RUN_DIR, or --topology, --flows and -o for an HPCC-format scenario")
    from wormsim.netsim.scenario import run_hpcc_scenario, write_scenario_outputs

    with user_errors():
        result = run_hpcc_scenario(topology, flows, config, cc, routing, seed, mode or "packet")
        write_scenario_outputs(result, out)
    done = int((result.finish_ps >= 0).sum())
    typer.echo(f"{done}/{result.flows.n} flows finished; wrote {out}")
