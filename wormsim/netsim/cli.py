"""``wormsim netsim …``: run a run directory's DAG, or an HPCC-format scenario."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from wormsim.clikit import JsonOpt
from wormsim.humanize import human_time
from wormsim.netsim.cc_registry import CC_NAMES
from wormsim.units import PS_PER_S_F

if TYPE_CHECKING:
    from wormsim.netsim.wormhole.spec import WormholeSpec

__all__ = ["app"]

app = typer.Typer(
    help="Stage 3: the network simulation (packet, wormhole, flow).", no_args_is_help=True
)

Mode = Literal["packet", "wormhole", "flow"]
CC = Literal[CC_NAMES]  # type: ignore[valid-type]


def _wormhole_from_pairs(pairs: list[str]) -> WormholeSpec:
    """A :class:`WormholeSpec` from ``KEY=VALUE`` items, as the scenario command's ``--wormhole``
    gives them (parsed like ``--set``: :func:`wormsim.inputs.parse_assignment`).

    Raises
    ------
    ConfigError
        An item without ``=`` (the same message as ``--set``).
    NetsimInputError
        An unknown key or a bad value, naming the item and the field.

    Examples
    --------
    >>> _wormhole_from_pairs(["skip_unit=flow", "window=10", "theta=0.1"]).window
    10
    """
    from pydantic import ValidationError

    from wormsim.inputs import parse_assignment
    from wormsim.netsim.errors import NetsimInputError
    from wormsim.netsim.wormhole.spec import WormholeSpec

    values: dict[str, object] = {}
    for item in pairs:
        parts, value = parse_assignment(item, "--wormhole", "skip_unit=flow")
        values[".".join(parts)] = value
    try:
        return WormholeSpec(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "value"
        msg = (
            "unknown key; see sim.wormhole in `wormsim pipeline schema`"
            if err["type"] == "extra_forbidden"
            else err["msg"].removeprefix("Value error, ")
        )
        raise NetsimInputError(f"--wormhole {field}={values.get(field, '')!s}: {msg}") from None


@app.callback()
def _main() -> None:
    """Stage 3: the network simulation (packet, wormhole, flow)."""


@app.command("run")
def run(
    run_dir: Annotated[
        Path | None, typer.Argument(metavar="RUN_DIR", help="Run directory with dag.parquet.")
    ] = None,
    mode: Annotated[
        Mode | None, typer.Option("--mode", help="Engine (default: sim.mode, or packet).")
    ] = None,
    topology: Annotated[Path | None, typer.Option("--topology", help="HPCC topology.txt")] = None,
    flows: Annotated[Path | None, typer.Option("--flows", help="HPCC flow.txt")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="HPCC config.txt")] = None,
    cc: Annotated[
        CC | None, typer.Option("--cc", help="Congestion control (default: config's CC_MODE).")
    ] = None,
    routing: Annotated[
        Literal["ns3", "hash"], typer.Option("--routing", help="ECMP path choice (scenarios).")
    ] = "ns3",
    seed: Annotated[int, typer.Option("--seed", help="ECMP/RED seed (scenarios)")] = 0,
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="Output directory to create (scenarios).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing output directory (scenarios).")
    ] = False,
    wormhole: Annotated[
        list[str] | None,
        typer.Option(
            "--wormhole",
            metavar="KEY=VALUE",
            help="A Wormhole setting for a scenario in --mode wormhole (repeatable), e.g. "
            "--wormhole skip_unit=flow --wormhole window=10 (the keys of sim.wormhole).",
        ),
    ] = None,
    monitor_period_ns: Annotated[
        int,
        typer.Option(
            "--monitor-period-ns",
            min=0,
            help="Sample flow rates and switch queues every N ns (packet mode; 0 = off).",
        ),
    ] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Simulate a run directory's DAG, or an HPCC-format scenario.

    With RUN_DIR: writes flows.parquet, nodes.parquet and summary.json into it. With --topology
    and --flows (and optionally --config): runs the scenario and writes fct.txt,
    flows.parquet and summary.json into a new directory given by -o.
    """
    from wormsim.clikit import emit, fail, user_errors

    if run_dir is not None:
        if topology or flows or config or out:
            fail("give either a RUN_DIR or --topology/--flows/-o, not both")
        if wormhole:
            fail(
                "--wormhole applies to HPCC scenarios; a run directory takes sim.wormhole from "
                "its config (wormsim pipeline run ... --set sim.wormhole.KEY=VALUE)"
            )
        from wormsim.collective.stage import read_dag
        from wormsim.experiment import load_run_config
        from wormsim.netsim.stage import simulate_run_dir

        with user_errors():
            dag = read_dag(run_dir)  # first: without a DAG, the fix is `collective expand`
            cfg = load_run_config(run_dir)
            summary = simulate_run_dir(run_dir, cfg, mode, monitor_period_ns, dag=dag)
        text = (
            f"iteration time {human_time(summary['iteration_time_s'] * PS_PER_S_F)} "
            f"({summary['mode']} mode, {summary['sim_wall_s']:.2f} s wall); wrote {run_dir}"
        )
        emit({"run_dir": str(run_dir), **summary}, as_json, text)
        return
    if topology is None or flows is None or out is None:
        fail("give a RUN_DIR, or --topology, --flows and -o for an HPCC-format scenario")
    if monitor_period_ns:
        fail("--monitor-period-ns applies to run directories only, not to HPCC scenarios")
    if wormhole and mode != "wormhole":
        fail("--wormhole applies to --mode wormhole; add --mode wormhole or drop --wormhole")
    from wormsim.netsim.stage import run_scenario_dir

    with user_errors():
        spec = _wormhole_from_pairs(wormhole) if wormhole else None
        result = run_scenario_dir(
            topology, flows, out, config, cc, routing, seed, mode, force, wormhole=spec
        )
    done = int((result.finish_ps >= 0).sum())
    counts = {"flows_count": result.flows.n, "flows_finished_count": done}
    emit(
        {"out": str(out), **counts}, as_json, f"{done}/{result.flows.n} flows finished; wrote {out}"
    )
