"""HPCC-format scenarios: ``topology.txt`` + ``flow.txt`` (+ ``config.txt``) run end to end.

Any scenario of the HPCC ns-3 family runs here unchanged and writes ``fct.txt`` in its format
(completion order, hex IPs, the standalone FCT of ns-3), so results compare line by line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from wormsim.netsim.cc_registry import CC_NAMES
from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.formats.hpcc_config import read_hpcc_config
from wormsim.netsim.formats.hpcc_io import (
    FlowSet,
    check_scenario_time,
    flows_to_dag,
    read_flows,
    read_topology,
    write_fct,
)
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.sim_spec import SimSpec
from wormsim.netsim.simulate import MODES, simulate
from wormsim.netsim.wormhole.spec import WormholeSpec

__all__ = [
    "ScenarioResult",
    "run_hpcc_scenario",
    "write_scenario_outputs",
    "CCS",
    "ROUTINGS",
]

CCS = CC_NAMES
ROUTINGS = ("ns3", "hash")


@dataclass
class ScenarioResult:
    """Per-flow results of a scenario run; ``counters`` is the run's
    :meth:`~wormsim.netsim.result.SimResult.summary`."""

    flows: FlowSet
    topo: Topology
    net: NetworkSpec
    mode: str
    routing: str
    finish_ps: np.ndarray
    sport: np.ndarray
    standalone_ps: np.ndarray
    counters: dict[str, float]

    @property
    def fct_ps(self) -> np.ndarray:
        """Flow completion times (``-1`` for unfinished flows)."""
        return np.where(self.finish_ps >= 0, self.finish_ps - self.flows.start_ps, -1)

    def table(self) -> pl.DataFrame:
        """``flows.parquet``: flow_id (line order in flow.txt), endpoints, times."""
        fl = self.flows
        return pl.DataFrame(
            {
                "flow_id": np.arange(fl.n),
                "src": fl.src,
                "dst": fl.dst,
                "size_bytes": fl.size_bytes,
                "start_ps": fl.start_ps,
                "finish_ps": self.finish_ps,
                "fct_ps": self.fct_ps,
                "standalone_fct_ps": self.standalone_ps,
            }
        )


def _check_choices(cc: str | None, routing: str, mode: str) -> None:
    if routing not in ROUTINGS:
        raise NetsimInputError(f"--routing must be one of {', '.join(ROUTINGS)}, not {routing!r}")
    if cc is not None and cc not in CCS:
        raise NetsimInputError(f"--cc must be one of {', '.join(CCS)}, not {cc!r}")
    if mode not in MODES:
        raise NetsimInputError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")


def _standalone_ps(fl: FlowSet, topo: Topology, payload: int, qp: np.ndarray, routes) -> np.ndarray:
    """ns-3's standalone FCT of every flow over the route the engine gave it (0 if none)."""
    from wormsim.netsim.fabric.paths import fabric_paths

    standalone = np.zeros(fl.n, np.int64)
    fabric = np.flatnonzero(qp >= 0)
    sizes = np.zeros(int(qp.max(initial=-1)) + 1, np.int64)
    sizes[qp[fabric]] = fl.size_bytes[fabric]
    ideal = fabric_paths(topo, routes, sizes, payload)["ideal_fct_ps"]
    standalone[fabric] = ideal[qp[fabric]]
    return standalone


def _check_ecn_maps(net: NetworkSpec, topo: Topology, config: Path | None) -> None:
    """Every switch port's link speed needs an ECN entry (ns-3 asserts the same)."""
    for rate in np.unique(topo.port_rate_bps[topo.is_switch[topo.port_node]]):
        try:
            net.ecn_for_rate(int(rate))
        except NetsimInputError as exc:
            where = config if config is not None else "the default ECN maps (no --config)"
            raise NetsimInputError(f"{where}: {exc}") from None


def run_hpcc_scenario(
    topology: Path,
    flows: Path,
    config: Path | None = None,
    cc: str | None = None,
    routing: str = "ns3",
    seed: int = 0,
    mode: str = "packet",
    wormhole: WormholeSpec | None = None,
    on_inputs_read: Callable[[], None] | None = None,
) -> ScenarioResult:
    """Run an HPCC-format scenario in packet, wormhole or flow mode.

    ``config`` is an HPCC ``config.txt`` whose CC_MODE and parameters are honoured; ``cc``
    overrides its congestion control (or picks one, with the upstream defaults, without a config).
    ``wormhole`` sets Wormhole's knobs in mode ``wormhole`` (default: :class:`WormholeSpec`'s).
    ``on_inputs_read`` is called once the inputs are read and checked, before the simulation
    (the command line prints its compile notice there, so a bad input fails without one).
    Flows that finish after the config's ``SIMULATOR_STOP_TIME`` are reported unfinished, as ns-3
    never writes them to ``fct.txt``.

    Raises
    ------
    NetsimInputError
        A bad choice of ``cc``/``routing``/``mode``, or bad input files (naming file and line).
    """
    _check_choices(cc, routing, mode)
    topo = read_topology(topology)
    fl = read_flows(flows, topo)
    stop_ps = None
    if config is not None:
        net, stop_ps = read_hpcc_config(config, **({"cc": cc} if cc else {}))
    else:
        net = NetworkSpec(cc=cc or "hpcc")
    check_scenario_time(topo, fl, net.payload_size_bytes, str(flows))
    if mode != "flow":
        _check_ecn_maps(net, topo, config)
    dag, fnode = flows_to_dag(fl)
    sim = SimSpec(mode=mode, routing=routing, seed=seed, wormhole=wormhole or WormholeSpec())
    if on_inputs_read is not None:
        on_inputs_read()
    res = simulate(dag, topo, net, sim)
    fin = res.node_finish_ps[fnode].copy()
    if stop_ps is not None:
        fin[fin > stop_ps] = -1
    qp = res.flow_qp[fnode]
    sport = np.where(qp >= 0, res.sport[np.clip(qp, 0, None)] if res.sport.size else 0, 10000)
    standalone = _standalone_ps(fl, topo, net.payload_size_bytes, qp, res.routes)
    return ScenarioResult(fl, topo, net, mode, routing, fin, sport, standalone, res.summary(mode))


def write_scenario_outputs(result: ScenarioResult, out: Path) -> None:
    """Write ``fct.txt`` (HPCC format, completion order), ``flows.parquet``, ``summary.json``."""
    from wormsim.rundir import atomic_write, write_json, write_parquet

    fl, fin = result.flows, result.finish_ps
    out.mkdir(parents=True, exist_ok=True)
    done = np.flatnonzero(fin >= 0)
    order = done[np.lexsort((done, fin[done]))]
    atomic_write(
        out / "fct.txt",
        lambda p: write_fct(
            p,
            fl.src,
            fl.dst,
            result.sport,
            fl.dport,
            fl.size_bytes,
            fl.start_ps,
            result.fct_ps,
            result.standalone_ps,
            order=order,
        ),
    )
    write_parquet(out / "flows.parquet", result.table())
    write_json(
        out / "summary.json",
        {
            **result.counters,
            "cc": result.net.cc,
            "routing": result.routing,
            "flows": fl.n,
            "flows_finished": int(done.size),
        },
    )
