"""The stages as library calls over a run directory: workload -> collective -> netsim.

Each function reads what earlier stages wrote, writes its own output atomically and records its
wall time in ``manifest.json``. The CLI commands are thin wrappers around these.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from wormsim.errors import ConfigError, WormsimError
from wormsim.experiment import ExperimentConfig, load_run_config
from wormsim.rundir import Manifest, Stopwatch, read_parquet, write_parquet

__all__ = [
    "stage_workload",
    "stage_collective",
    "read_ops",
    "read_dag",
    "run_engine",
    "stage_netsim",
    "read_node_times",
    "SimulationIncomplete",
]

OPS_FILE = "ops.parquet"
DAG_FILE = "dag.parquet"


# Outputs of each stage, in pipeline order: rewriting a stage removes the later stages' outputs,
# which would otherwise describe the previous DAG.
STAGE_OUTPUTS: dict[str, tuple[str, ...]] = {
    "workload": ("ops.parquet",),
    "collective": ("dag.parquet",),
    "netsim": (
        "flows.parquet",
        "nodes.parquet",
        "summary.json",
        "rate_samples.parquet",
        "queue_samples.parquet",
    ),
}


def _drop_downstream(run_dir: Path, stage: str) -> None:
    """Remove the outputs of every stage after ``stage`` (they are stale now)."""
    names = list(STAGE_OUTPUTS)
    later = names[names.index(stage) + 1 :]
    for name in later:
        for f in STAGE_OUTPUTS[name]:
            (Path(run_dir) / f).unlink(missing_ok=True)
    man = Manifest(run_dir)
    man.drop_stages(later)
    man.save()


def _require(run_dir: Path, name: str, how: str) -> Path:
    path = Path(run_dir) / name
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no {name}; run `{how}` first")
    return path


def _read_table(run_dir: Path, name: str, how: str, columns=None) -> pl.DataFrame:
    return read_parquet(_require(run_dir, name, how), how, columns)


def read_ops(run_dir: Path) -> pl.DataFrame:
    """``ops.parquet`` of a run directory."""
    from wormsim.workload.ops import OPS_SCHEMA

    ops = _read_table(run_dir, OPS_FILE, "wormsim workload build")
    _check_columns(run_dir, OPS_FILE, ops, OPS_SCHEMA, "wormsim workload build")
    return ops


def read_dag(run_dir: Path) -> pl.DataFrame:
    """``dag.parquet`` of a run directory."""
    from wormsim.collective.dag import DAG_SCHEMA

    dag = _read_table(run_dir, DAG_FILE, "wormsim collective expand")
    _check_columns(run_dir, DAG_FILE, dag, DAG_SCHEMA, "wormsim collective expand")
    return dag


def _check_columns(run_dir: Path, name: str, df: pl.DataFrame, schema, how: str) -> None:
    """Refuse a table whose columns or types differ from its contract."""
    from wormsim.errors import UnreadableFileError

    bad = [c for c, dtype in schema.items() if c not in df.columns or df.schema[c] != dtype]
    if bad:
        raise UnreadableFileError(
            f"{Path(run_dir) / name} does not follow its contract (columns missing or of the "
            f"wrong type: {', '.join(bad[:5])}); rerun `{how}` to rewrite it"
        )


def stage_workload(cfg: ExperimentConfig, run_dir: Path) -> pl.DataFrame:
    """Build ``ops.parquet`` for the experiment into ``run_dir``."""
    from wormsim.workload.builder import build_ops

    with Stopwatch() as sw:
        ops = build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)
        write_parquet(Path(run_dir) / OPS_FILE, ops)
    _drop_downstream(run_dir, "workload")
    man = Manifest(run_dir)
    man.stage("workload", sw.seconds, ops=ops.height)
    man.save()
    return ops


def stage_collective(run_dir: Path, cfg: ExperimentConfig | None = None) -> pl.DataFrame:
    """Expand ``ops.parquet`` into ``dag.parquet``."""
    from wormsim.collective.expand import expand_dag

    cfg = cfg or load_run_config(run_dir)
    ops = read_ops(run_dir)
    with Stopwatch() as sw:
        dag = expand_dag(ops, (cfg.cluster.gpus_per_node, cfg.cluster.gpus), cfg.collective)
        write_parquet(Path(run_dir) / DAG_FILE, dag)
    _drop_downstream(run_dir, "collective")
    man = Manifest(run_dir)
    n_flows = int((dag["kind"] == "flow").sum())
    man.stage("collective", sw.seconds, nodes=dag.height, flows=n_flows)
    man.save()
    return dag


FLOWS_FILE = "flows.parquet"
NODES_FILE = "nodes.parquet"
SUMMARY_FILE = "summary.json"

_LABELS = [
    "op_id",
    "collective",
    "algorithm",
    "step",
    "channel",
    "phase",
    "layer",
    "microbatch",
    "group",
]


class SimulationIncomplete(WormsimError):
    """Some DAG nodes never finished; the message says how many and the likely cause."""


def run_engine(
    cfg: ExperimentConfig, dag: pl.DataFrame, mode: str, progress=None, monitor_period_ns: int = 0
):
    """Run the DAG on the experiment's fabric with the chosen engine; returns the engine result.

    ``monitor_period_ns > 0`` samples every flow's rate and every switch port's queue (packet
    mode) at that period.
    """
    from wormsim.collective.dag import dag_to_arrays
    from wormsim.netsim.builders import build_topology

    arrays = dag_to_arrays(dag)
    topo = build_topology(cfg.cluster)
    kwargs = dict(routing=cfg.sim.routing, seed=cfg.sim.seed, progress=progress)
    if mode == "packet":
        from wormsim.netsim.packet_sim import Monitors, run_packet

        monitors = None
        if monitor_period_ns > 0:
            switch_ports = np.flatnonzero(topo.is_switch[topo.port_node])
            monitors = Monitors(
                period_ps=monitor_period_ns * 1000, queue_ports=tuple(int(p) for p in switch_ports)
            )
        return run_packet(arrays, topo, cfg.network, monitors=monitors, **kwargs)
    if mode == "wormhole":
        from wormsim.netsim.packet_sim import run_packet

        return run_packet(arrays, topo, cfg.network, wormhole=cfg.sim.wormhole, **kwargs)
    if mode == "flow":
        from wormsim.netsim.flow_engine import run_flow

        return run_flow(arrays, topo, cfg.network, **kwargs)
    raise ConfigError(f"sim.mode {mode!r} is unknown; use packet, wormhole or flow")


def stage_netsim(
    run_dir: Path, mode: str | None = None, progress=None, monitor_period_ns: int = 0
) -> dict:
    """Simulate ``dag.parquet``; write ``flows.parquet``, ``nodes.parquet`` and ``summary.json``
    (and ``rate_samples.parquet``/``queue_samples.parquet`` with monitors on)."""
    from wormsim.rundir import write_json

    cfg = load_run_config(run_dir)
    mode = mode or cfg.sim.mode
    if monitor_period_ns and mode != "packet":
        raise ConfigError(
            f"--monitor-period-ns samples rates and queues in packet mode only, and this run is "
            f"in {mode} mode; drop the option or use --mode packet"
        )
    if monitor_period_ns < 0:
        raise ConfigError(f"--monitor-period-ns must be >= 0 (0 = off), not {monitor_period_ns}")
    dag = read_dag(run_dir)
    with Stopwatch() as sw:
        result = run_engine(cfg, dag, mode, progress, monitor_period_ns)
    start, finish = result.node_start_ps, result.node_finish_ps
    unfinished = int((finish < 0).sum())
    if unfinished:
        drops = int(result.counters.get("drops", 0))
        hint = (
            f" ({drops} packets were dropped and RDMA go-back-N has no timeout, as in "
            "HPCC ns-3: enable PFC (network.pfc_enabled) or enlarge the buffer)"
            if drops
            else ""
        )
        raise SimulationIncomplete(
            f"{unfinished} of {dag.height} DAG nodes never finished in {mode} mode{hint}; "
            "no netsim output was written"
        )
    nodes = dag.select(
        "node_id", "kind", "src", "dst", "rank", "size_bytes", "duration_ps", *_LABELS
    ).with_columns(pl.Series("start_ps", start), pl.Series("finish_ps", finish))
    flows = nodes.filter(pl.col("kind") == "flow").select(
        pl.col("node_id").alias("flow_id"),
        "src",
        "dst",
        "size_bytes",
        "start_ps",
        "finish_ps",
        (pl.col("finish_ps") - pl.col("start_ps")).alias("fct_ps"),
        *_LABELS,
    )
    counters = {
        k: (float(v) if isinstance(v, float) else int(v)) for k, v in result.counters.items()
    }
    summary = {
        **counters,
        "iteration_time_s": float(np.max(finish)) / 1e12 if finish.size else 0.0,
        "mode": mode,
        "sim_wall_s": float(counters.get("sim_wall_s", sw.seconds)),
        "events_processed": int(counters.get("events_processed", 0)),
        "nodes": dag.height,
        "flows": flows.height,
        "stage_wall_s": sw.seconds,
    }
    for f in STAGE_OUTPUTS["netsim"]:  # a previous run's monitors must not outlive it
        (Path(run_dir) / f).unlink(missing_ok=True)
    if monitor_period_ns > 0 and mode == "packet":
        write_parquet(Path(run_dir) / "rate_samples.parquet", result.rate_samples)
        write_parquet(Path(run_dir) / "queue_samples.parquet", result.queue_samples)
    write_parquet(Path(run_dir) / NODES_FILE, nodes)
    write_parquet(Path(run_dir) / FLOWS_FILE, flows)
    memo = getattr(result, "memo", None)  # which memo store state a Wormhole run started from
    if memo is not None:
        summary.update(memo.summary())  # memo_store, memo_mode, memo_fingerprint
    write_json(Path(run_dir) / SUMMARY_FILE, summary)
    man = Manifest(run_dir)
    man.stage("netsim", sw.seconds, mode=mode)
    man.save()
    return summary


def read_node_times(run_dir: Path):
    """Start and finish (ps) of every DAG node, from ``nodes.parquet``."""
    nodes = _read_table(run_dir, NODES_FILE, "wormsim netsim run", ["start_ps", "finish_ps"])
    return nodes["start_ps"].to_numpy(), nodes["finish_ps"].to_numpy()
