"""One entry to the network simulation, whichever engine runs it: :func:`simulate`.

The pipeline's netsim stage and HPCC scenarios both call it; it picks the engine from
``sim.mode`` (``packet``: :func:`~wormsim.netsim.packet.run.run_packet`; ``wormhole``: the same
engine with Wormhole fast-forwarding and memoization; ``flow``: the max-min fluid engine
:func:`~wormsim.netsim.flow.run.run_flow`) and returns one :class:`~wormsim.netsim.result.
SimResult`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wormsim.collective.dag import DagArrays
from wormsim.memo import MemoStore
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.result import SimResult
from wormsim.netsim.sim_spec import SimSpec
from wormsim.progress import engine_task
from wormsim.units import PS_PER_NS

__all__ = ["simulate", "MODES"]

MODES = ("packet", "wormhole", "flow")
"""Simulation modes (``sim.mode``)."""


def simulate(
    dag: DagArrays,
    topology: Topology,
    network: NetworkSpec,
    sim: SimSpec,
    *,
    progress: Callable[[int, int, int], None] | None = None,
    monitor_period_ns: int = 0,
    memo_store: MemoStore | None = None,
    label: str | None = None,
) -> SimResult:
    """Simulate the DAG on the network in mode ``sim.mode``.

    Parameters
    ----------
    dag : the DAG arrays (:func:`~wormsim.collective.dag.dag_to_arrays`).
    topology, network : the fabric and its configuration (congestion control, buffers, ...).
    sim : mode, ECMP routing and seed, Wormhole knobs.
    progress : called as ``progress(sim_time_ps, nodes_done, events)`` between kernel calls;
        default: the display of :func:`wormsim.progress.engine_task` (off with
        :func:`wormsim.progress.set_enabled`).
    monitor_period_ns : > 0 samples every flow's rate and every switch port's queue at this
        period (mode ``packet`` only).
    memo_store : the memo store of a Wormhole run (default: the one ``sim.wormhole.memo_path``
        names, see :func:`~wormsim.memo.resolve_store_path`).
    label : what the progress display calls the run (default: ``"<mode> simulation"``).

    Raises
    ------
    NetsimInputError
        Monitors asked for outside mode ``packet``, or bad flows for this topology (see
        :func:`~wormsim.netsim.common.flow_plan.plan_flows`).
    """
    if monitor_period_ns < 0:
        raise NetsimInputError(
            f"--monitor-period-ns must be >= 0 (0 = off), not {monitor_period_ns}"
        )
    if monitor_period_ns and sim.mode != "packet":
        raise NetsimInputError(
            f"--monitor-period-ns samples rates and queues in packet mode only, and this run is "
            f"in {sim.mode} mode; drop the option or use --mode packet"
        )
    if progress is None:
        with engine_task(label or f"{sim.mode} simulation", dag.n_nodes) as shown:
            return _run(dag, topology, network, sim, shown, monitor_period_ns, memo_store)
    return _run(dag, topology, network, sim, progress, monitor_period_ns, memo_store)


def _run(
    dag: DagArrays,
    topology: Topology,
    network: NetworkSpec,
    sim: SimSpec,
    progress: Callable[[int, int, int], None] | None,
    monitor_period_ns: int,
    memo_store: MemoStore | None,
) -> SimResult:
    kwargs = dict(routing=sim.routing, seed=sim.seed, progress=progress)
    if sim.mode == "flow":
        from wormsim.netsim.flow.run import run_flow

        return run_flow(dag, topology, network, **kwargs)
    from wormsim.netsim.packet.run import Monitors, run_packet

    monitors = None
    if monitor_period_ns > 0:
        switch_ports = np.flatnonzero(topology.is_switch[topology.port_node])
        monitors = Monitors(
            period_ps=monitor_period_ns * PS_PER_NS, queue_ports=tuple(int(p) for p in switch_ports)
        )
    wormhole = sim.wormhole if sim.mode == "wormhole" else None
    return run_packet(
        dag, topology, network, monitors=monitors, wormhole=wormhole, memo_store=memo_store,
        **kwargs,
    )  # fmt: skip
