"""The netsim stage over a run directory: ``dag.parquet`` in; nodes, flows and summary out.

:func:`stage_netsim` runs the DAG on the experiment's fabric with the chosen engine
(:func:`~wormsim.netsim.simulate.simulate`) and writes ``nodes.parquet``, ``flows.parquet``
and ``summary.json`` (and the monitors' samples) atomically, recording its wall time in
``manifest.json``;
:func:`simulate_run_dir` is the same step as the commands run it (a compile notice and a progress
bar on stderr). :func:`read_node_times` is how the analysis reads the result back.
:func:`run_scenario_dir` is the HPCC-format scenario run into a new output directory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import polars as pl

from wormsim.clikit import notice
from wormsim.collective.stage import read_dag
from wormsim.errors import WormsimError
from wormsim.netsim.common.warmup import compile_notice
from wormsim.netsim.fabric.cluster import ClusterSpec
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.sim_spec import SimSpec
from wormsim.netsim.wormhole.spec import WormholeSpec
from wormsim.rundir import (
    STAGE_OUTPUTS,
    Manifest,
    Stopwatch,
    drop_downstream,
    read_table,
    staged_run_dir,
    write_json,
    write_parquet,
)
from wormsim.units import BPS_PER_BYTE_PER_PS, PS_PER_S_F

if TYPE_CHECKING:
    from wormsim.netsim.fabric.topology import Topology
    from wormsim.netsim.result import SimResult
    from wormsim.netsim.scenario import ScenarioResult

__all__ = [
    "FLOWS_FILE",
    "NODES_FILE",
    "SUMMARY_FILE",
    "PORTS_FILE",
    "NetsimSections",
    "SimulationIncomplete",
    "stage_netsim",
    "simulate_run_dir",
    "read_node_times",
    "run_scenario_dir",
]

#: Every flow with its start, finish and completion time.
FLOWS_FILE = "flows.parquet"
#: Every DAG node with its start and finish time.
NODES_FILE = "nodes.parquet"
#: The iteration time, the mode and the engine's counters.
SUMMARY_FILE = "summary.json"
#: Every directed port: endpoints, tier, line rate, bytes carried, queue, PFC and ECN counters.
PORTS_FILE = "ports.parquet"

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

#: ``progress(sim_time_ps, nodes_done, events)``, called by the engines as they go.
Progress = Callable[[int, int, int], None]


class NetsimSections(Protocol):
    """The sections of an experiment the netsim stage reads (an ``ExperimentConfig`` has them).

    Attributes
    ----------
    cluster : ClusterSpec
        GPUs, servers and the fabric.
    network : NetworkSpec
        Congestion control, ECN, PFC and buffers.
    sim : SimSpec
        Engine, routing, seed and the Wormhole knobs.
    """

    @property
    def cluster(self) -> ClusterSpec: ...

    @property
    def network(self) -> NetworkSpec: ...

    @property
    def sim(self) -> SimSpec: ...


class SimulationIncomplete(WormsimError):
    """Some DAG nodes never finished; the message says how many and the likely cause.

    Not bad input in itself, so the CLI exits with its own status (3,
    :data:`wormsim.clikit.EXIT_INCOMPLETE`), not 2.
    """

    exit_code = 3


def stage_netsim(
    run_dir: Path,
    cfg: NetsimSections,
    mode: str | None = None,
    progress: Progress | None = None,
    monitor_period_ns: int = 0,
    *,
    dag: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """Simulate ``dag.parquet`` of ``run_dir``; write ``flows.parquet``, ``nodes.parquet`` and
    ``summary.json`` (and ``rate_samples.parquet``/``queue_samples.parquet`` with monitors on).

    Parameters
    ----------
    run_dir : Path
        A run directory with ``dag.parquet``.
    cfg : NetsimSections
        The experiment (its ``cluster``, ``network`` and ``sim`` sections).
    mode : {"packet", "wormhole", "flow"}, optional
        The engine (default ``cfg.sim.mode``); ``experiment.yaml`` is not changed.
    progress : callable, optional
        ``progress(sim_time_ps, nodes_done, events)``, called by the engine as it goes
        (default: the display of :mod:`wormsim.progress`).
    monitor_period_ns : int
        Sample flow rates and switch queues at this period (packet mode; 0 = off).
    dag : polars.DataFrame, optional
        ``dag.parquet`` of ``run_dir`` if the caller has read it already (read otherwise).

    Returns
    -------
    dict
        The summary, as written to ``summary.json``.

    Raises
    ------
    NetsimInputError
        Monitors outside packet mode, or a negative period.
    SimulationIncomplete
        Some DAG nodes never finished; nothing was written.
    """
    from wormsim.collective.dag import dag_to_arrays
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.netsim.simulate import simulate

    mode = mode or cfg.sim.mode
    sim = cfg.sim.model_copy(update={"mode": mode})
    if dag is None:
        dag = read_dag(run_dir)
    topo = build_topology(cfg.cluster)
    with Stopwatch() as sw:
        result = simulate(
            dag_to_arrays(dag), topo, cfg.network, sim,
            progress=progress, monitor_period_ns=monitor_period_ns,
        )  # fmt: skip
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
    flows, ports = _paths_and_ports(flows, topo, result, cfg.network.payload_size_bytes)
    summary = {
        **result.summary(mode),
        "iteration_time_s": float(np.max(finish)) / PS_PER_S_F if finish.size else 0.0,
        "nodes": dag.height,
        "flows": flows.height,
        "stage_wall_s": sw.seconds,
    }
    for f in STAGE_OUTPUTS["netsim"]:  # a previous run's monitors must not outlive it
        (Path(run_dir) / f).unlink(missing_ok=True)
    drop_downstream(Path(run_dir), "netsim")  # a report of the previous results
    if monitor_period_ns > 0 and mode == "packet":
        write_parquet(Path(run_dir) / "rate_samples.parquet", result.rate_samples)
        write_parquet(Path(run_dir) / "queue_samples.parquet", result.queue_samples)
    write_parquet(Path(run_dir) / PORTS_FILE, ports)
    write_parquet(Path(run_dir) / NODES_FILE, nodes)
    write_parquet(Path(run_dir) / FLOWS_FILE, flows)
    write_json(Path(run_dir) / SUMMARY_FILE, summary)
    man = Manifest(run_dir)
    man.stage("netsim", sw.seconds, mode=mode)
    man.save()
    return summary


def _paths_and_ports(
    flows: pl.DataFrame, topo: Topology, result: SimResult, payload_bytes: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The route facts of every flow (``tier``, ``hops``, ``bottleneck_bps``, ``base_rtt_ps``,
    ``ideal_fct_ps``) and the ``ports`` table (see :mod:`~wormsim.netsim.fabric.paths`)."""
    from wormsim.netsim.fabric.paths import (
        fabric_paths,
        level_name,
        port_payload_bytes,
        port_tiers,
        switch_levels,
    )
    from wormsim.netsim.packet.port_outputs import columns as port_columns

    levels = switch_levels(topo)
    node_id = flows["flow_id"].to_numpy()
    size = flows["size_bytes"].to_numpy()
    qp = result.flow_qp[node_id] if result.flow_qp.size else np.full(node_id.size, -1)
    n_qps = int(qp.max(initial=-1)) + 1
    qp_size = np.zeros(n_qps, np.int64)
    fabric = qp >= 0
    qp_size[qp[fabric]] = size[fabric]
    fp = fabric_paths(topo, result.routes, qp_size, payload_bytes, levels)
    nvlink = ~fabric & (size > 0)
    nv_rate = float(max(int(topo.nvlink_rate_bps), 1))
    hops = np.zeros(node_id.size, np.int64)
    bottleneck = np.zeros(node_id.size, np.int64)
    base_rtt = np.zeros(node_id.size, np.int64)
    ideal = np.zeros(node_id.size, np.int64)
    hops[fabric], bottleneck[fabric] = fp["hops"][qp[fabric]], fp["bottleneck_bps"][qp[fabric]]
    base_rtt[fabric], ideal[fabric] = fp["base_rtt_ps"][qp[fabric]], fp["ideal_fct_ps"][qp[fabric]]
    bottleneck[nvlink] = topo.nvlink_rate_bps
    ideal[nvlink] = np.round(size[nvlink] * BPS_PER_BYTE_PER_PS / nv_rate).astype(np.int64)
    # the tier of each flow by its code: 0 local, 1 nvlink, then the fabric's top levels
    top, top_code = np.unique(fp["top_level"][qp[fabric]], return_inverse=True)
    tier_code = np.zeros(node_id.size, np.int64)
    tier_code[fabric] = 2 + top_code.reshape(-1)
    tier_code[nvlink] = 1
    tiers = pl.Series("tier", ["local", "nvlink", *(level_name(v) for v in top)], pl.String)
    flows = flows.with_columns(
        tiers.gather(tier_code),
        pl.Series("hops", hops),
        pl.Series("bottleneck_bps", bottleneck),
        pl.Series("base_rtt_ps", base_rtt),
        pl.Series("ideal_fct_ps", ideal),
    )
    n = topo.n_ports
    outputs = port_columns(result.port_outputs)
    if any(a.shape != (n,) for a in outputs.values()):  # every engine reports every port
        raise AssertionError("the engine's per-port counters do not cover every port")
    ports = pl.DataFrame(
        {
            "port": np.arange(n, dtype=np.int64),
            "node": topo.port_node.astype(np.int64),
            "peer": topo.port_peer.astype(np.int64),
            "tier": port_tiers(topo, levels),
            "rate_bps": topo.port_rate_bps,
            "delay_ps": topo.port_delay_ps,
            "payload_bytes": port_payload_bytes(topo, result.routes, qp_size),
            **outputs,
        }
    )
    return flows, ports


def simulate_run_dir(
    run_dir: Path,
    cfg: NetsimSections,
    mode: str | None = None,
    monitor_period_ns: int = 0,
    *,
    dag: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """:func:`stage_netsim` as the commands run it, with what they show on stderr.

    Reads the DAG (unless given), prints a one-line notice when the engine's kernels must compile
    first (:func:`~wormsim.netsim.common.warmup.compile_notice`); the engine shows its progress
    (:func:`~wormsim.progress.engine_task`: a bar, a notebook bar or a line every few seconds).
    Parameters, result and errors are those of :func:`stage_netsim`.
    """
    if dag is None:
        dag = read_dag(run_dir)
    mode = mode or cfg.sim.mode
    notice(compile_notice(mode))
    return stage_netsim(run_dir, cfg, mode, None, monitor_period_ns, dag=dag)


def read_node_times(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Start and finish (ps) of every DAG node, from ``nodes.parquet``.

    Raises
    ------
    ConfigError
        The run directory has no ``nodes.parquet`` (netsim has not run, or its outputs were
        removed when an earlier stage was rerun).
    UnreadableFileError
        The file is damaged.
    """
    nodes = read_table(run_dir, NODES_FILE, "wormsim netsim run", ["start_ps", "finish_ps"])
    return nodes["start_ps"].to_numpy(), nodes["finish_ps"].to_numpy()


def run_scenario_dir(
    topology: Path,
    flows: Path,
    out: Path,
    config: Path | None = None,
    cc: str | None = None,
    routing: str = "ns3",
    seed: int = 0,
    mode: str | None = None,
    force: bool = False,
    argv: Sequence[str] | None = None,
    wormhole: WormholeSpec | None = None,
) -> ScenarioResult:
    """Run an HPCC-format scenario and write it into a new output directory ``out``.

    Prints the compile notice once the inputs are read (see :func:`simulate_run_dir`), runs
    :func:`~wormsim.netsim.scenario.run_hpcc_scenario` with ``topology``, ``flows``,
    ``config``, ``cc``, ``routing``, ``seed``, ``mode`` (default packet) and ``wormhole`` (the
    Wormhole settings in mode wormhole, recorded in the manifest), then writes
    ``fct.txt``, ``flows.parquet``, ``summary.json`` and a manifest (with a ``scenario`` key
    naming the input files, and the command line ``argv``, default ``sys.argv``) into a staging
    directory that becomes ``out`` (replaced whole with ``force``).

    Returns
    -------
    ScenarioResult
        The per-flow results.
    """
    from wormsim.netsim.scenario import run_hpcc_scenario, write_scenario_outputs

    mode = mode or "packet"
    result = run_hpcc_scenario(
        topology, flows, config, cc, routing, seed, mode, wormhole,
        on_inputs_read=lambda: notice(compile_notice(mode)),
    )  # fmt: skip
    with staged_run_dir(out, force) as stage_dir:
        write_scenario_outputs(result, stage_dir)
        man = Manifest(stage_dir)
        man.invocation((), argv)
        man.set(
            "scenario",
            {
                "topology": str(topology),
                "flows": str(flows),
                "config": str(config) if config else None,
            },
        )
        if mode == "wormhole":
            man.set("wormhole", (wormhole or WormholeSpec()).model_dump(mode="json"))
        man.save()
    return result
