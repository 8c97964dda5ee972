"""Flow-level engine: a max-min fair fluid simulator over the DAG (:func:`run_flow`).

The same DAG, topology and routes as the packet engine (:mod:`wormsim.netsim.packet.run`), with
every network flow modelled as a fluid whose rate is the max-min fair share of the *resources* it
crosses, recomputed by progressive filling whenever a flow starts or drains.

Model
-----
Resources
    Every directed fabric port (``0 .. n_ports-1``), and per host ``h`` an NVLink egress
    (``n_ports + h``) and ingress (``n_ports + n_nodes + h``) of rate ``topo.nvlink_rate_bps``
    (a non-blocking NVSwitch). A fabric flow uses the ports of its data route (route ``2q`` of
    :func:`~wormsim.netsim.fabric.routing.compile_routes`, called exactly as the packet engine
    does, so
    the ECMP choices are the same); ACKs use no capacity. An intra-server flow (both ends on the
    same server, ``host_server >= 0``) uses its source's NVLink egress and its destination's
    ingress and never touches the fabric.
Bytes on the wire
    A fabric flow of ``S`` bytes carries ``S + ceil(S / payload) * header`` bytes, with
    ``header = 36 + INT bytes of the cc`` (``cc_registry``), exactly what the
    packet engine puts on the wire. With ``net.ns3_truncate_tx_ns`` (ns-3.17 truncates each
    serialization to a whole ns, as the packet engine does) a port's usable rate is that of
    back-to-back full packets, ``W * 8 / floor_ns(W * 8 / rate)`` for ``W = payload + header``.
    NVLink flows carry ``S`` bytes (no headers), as in the packet engine's NVLink fluid.
Latency model
    The fluid drains its wire bytes at its max-min rate; the DAG node finishes
    ``latency`` later, where (ns-3's standalone FCT formula, ``base_rtt``)::

        latency = sum over data-route ports (delay + payload * 8 / rate)
                  + sum over ACK-route ports delay

    i.e. the last packet's propagation plus one packet serialization per hop, and the return of
    its ACK. A lone flow therefore finishes at ``start + wire_bytes * 8 / bottleneck + base_rtt``,
    ns-3's ``standalone_fct`` (with its header size). The bandwidth is released at the drain time,
    not at the finish (pipelining). NVLink flows have no latency; ``src == dst`` or 0-byte flows
    finish at once.
Recomputation
    All starts and drains at one simulated time are applied together (one *batch*), then only
    the flows those changes can affect are re-rated. Progressive filling is identical below the
    level ``theta`` = min(old rates of the drained flows, the level at which a resource of a
    started flow saturates given the current rates) -- exact, not a heuristic -- so flows below
    ``theta`` keep their rates and act as fixed loads, and only the non-fixed flows connected to
    the touched resources through non-fixed flows are filled again, over residual capacities.
    The filling runs in rounds: every resource whose fair share is a local minimum (no resource
    its flows cross has a lower share) saturates at that share, so a round freezes all of them at
    once; a round is ``O(F_c * L)`` array work for ``F_c`` flows of route length ``L``, and a few
    rounds suffice in practice. Flows whose rate does not change keep their drain time; drain
    times live in a lazy heap (re-timing pushes a new entry, stale ones are skipped or compacted).
    ``run_flow(..., incremental=False)`` re-rates the whole connected component instead (for
    validation).

Everything runs in one ``@njit`` kernel over structure-of-arrays state, int64 picoseconds; the
kernel returns to Python after a bounded number of event batches (so Ctrl-C and ``progress``
are served within about 0.1 s, :class:`~wormsim.netsim.common.budget.CallBudget`) or to grow
the optional rate log. The kernel lives in :mod:`wormsim.netsim.flow`: ``build`` (arrays from the
DAG and the flow plan), ``fields`` (the state described once: dtype, dimensions, unit and
meaning of every array), ``state`` (counters and the StructRef), ``timers`` (node-done and drain
queues on the packet engine's event heap), ``maxmin`` (attach, detach, progressive filling) and
``kernel`` (event loop and DAG executor).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext

import polars as pl

from wormsim.collective.dag import DagArrays
from wormsim.netsim.common.budget import CallBudget
from wormsim.netsim.common.dag_runtime import warm_once
from wormsim.netsim.fabric.topology import Topology
from wormsim.netsim.flow.build import BASE_HEADER_BYTES, build_arrays, flow_wire_bytes
from wormsim.netsim.flow.kernel import kernel
from wormsim.netsim.flow.state import (
    C_BATCHES,
    C_COMP_FLOWS,
    C_COMP_RES,
    C_DONE,
    C_INSTANT,
    C_LOG_LOST,
    C_LOG_N,
    C_NET_STARTED,
    C_NOW,
    C_NV_STARTED,
    C_PEAK_ACTIVE,
    C_RERATE,
    C_ROUNDS,
    F_FULL,
    grow_log,
    make_state,
)
from wormsim.netsim.flow.timers import I64_MAX
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.port_outputs import zeros as zero_port_outputs
from wormsim.netsim.result import SimResult
from wormsim.progress import stage

__all__ = ["run_flow", "flow_wire_bytes", "BASE_HEADER_BYTES"]


def _warm() -> float:
    """Compile (or load from cache) the kernel; the seconds spent (0.0 once done)."""

    def run(dag: DagArrays, topo: Topology) -> None:
        arrays, _, _ = build_arrays(dag, topo, NetworkSpec(cc="dcqcn"), "hash", 0, None, 16)
        kernel(make_state(arrays), I64_MAX, I64_MAX)

    return warm_once("flow", run)


def run_flow(
    dag: DagArrays,
    topo: Topology,
    net: NetworkSpec,
    *,
    routing: str = "hash",
    seed: int = 0,
    progress: Callable[[int, int, int], None] | None = None,
    header_bytes: int | None = None,
    record_rates: bool = False,
    incremental: bool = True,
    budget: CallBudget | None = None,
) -> SimResult:
    """Simulate the whole DAG with max-min fair fluid flows.

    Parameters
    ----------
    dag, topo, net : the flow DAG, the network and its configuration (payload size, cc for the
        header bytes, ``ns3_truncate_tx_ns``).
    routing : ``"hash"`` or ``"ns3"``, as in :func:`~wormsim.netsim.packet.run.run_packet` (the
        same routes for the same arguments).
    seed : seeds the ECMP hash (``"hash"``).
    progress : called as ``progress(sim_time_ps, nodes_done, batches)`` between kernel calls
        (each about 0.1 s of work, see :class:`~wormsim.netsim.common.budget.CallBudget`);
        with it, the build of routes and state shows as a :func:`~wormsim.progress.stage`.
    header_bytes : per-packet header bytes on the wire; default ``36 + INT bytes`` of ``net.cc``
        (what the packet engine sends); 48 reproduces ns-3's ``standalone_fct`` constant.
    record_rates : log every rate change as ``rate_samples`` (``time_ps, qp, node_id,
        rate_bps``; rate 0 when a flow drains).
    incremental : re-rate only the flows a change can affect (default); ``False`` re-rates the
        whole connected component of every change (same allocation, slower; for validation).
    budget : the work bound of one kernel call (default: about 0.1 s); the results do not
        depend on it.

    Returns
    -------
    SimResult
        ``node_start_ps``/``node_finish_ps`` per DAG node (-1 = never started / finished),
        ``flow_qp``/``sport``/``routes`` as in packet mode, zero per-port outputs, and
        ``counters``: ``rate_recomputations``, ``flows_fabric``, ``flows_nvlink``,
        ``flows_instant``, ``dag_nodes_done``, ``nodes_unfinished``, ``peak_active_flows``,
        ``rerated_flows`` (flows re-rated, summed over recomputations), ``filling_rounds``,
        ``events_processed`` (batches of simultaneous changes), ``sim_wall_s``, ``compile_s``,
        ``build_s``, ``sim_end_ps``.
    """
    t0 = time.perf_counter()
    shown = stage("flow engine: building routes and state") if progress else nullcontext()
    with shown:  # a large cluster's build takes tens of seconds
        A, flow_qp, sport = build_arrays(
            dag, topo, net, routing, seed, header_bytes, 4096 if record_rates else 0
        )
        A["fsc"][F_FULL] = 0.0 if incremental else 1.0
        S = make_state(A)
    t_build = time.perf_counter() - t0
    compile_s = _warm()
    t1 = time.perf_counter()
    budget = budget or CallBudget(first=2_000, lo=100)
    while True:  # calls of bounded work: Ctrl-C and progress are served between them
        status = kernel(S, I64_MAX, budget.stop(A["cnt"][C_BATCHES]))
        budget.observe(A["cnt"][C_BATCHES])
        if status == 2:
            grow_log(A)
            S = make_state(A)
            continue
        if status == 1:
            if progress is not None:
                progress(int(A["cnt"][C_NOW]), int(A["cnt"][C_DONE]), int(A["cnt"][C_BATCHES]))
            continue
        break
    wall = time.perf_counter() - t1
    if progress is not None:
        progress(int(A["cnt"][C_NOW]), int(A["cnt"][C_DONE]), int(A["cnt"][C_BATCHES]))
    c = A["cnt"]
    n = dag.n_nodes
    counters: dict[str, float] = {
        "events_processed": int(c[C_BATCHES]),
        "rate_recomputations": int(c[C_RERATE]),
        "flows_fabric": int(c[C_NET_STARTED]),
        "flows_nvlink": int(c[C_NV_STARTED]),
        "flows_instant": int(c[C_INSTANT]),
        "dag_nodes_done": int(c[C_DONE]),
        "nodes_unfinished": n - int(c[C_DONE]),
        "peak_active_flows": int(c[C_PEAK_ACTIVE]),
        "rerated_flows": int(c[C_COMP_FLOWS]),
        "rerated_resources": int(c[C_COMP_RES]),
        "filling_rounds": int(c[C_ROUNDS]),
        "rate_samples_lost": int(c[C_LOG_LOST]),
        "sim_wall_s": wall,
        "compile_s": compile_s,
        "build_s": t_build,
        "sim_end_ps": int(c[C_NOW]),
    }
    k = int(c[C_LOG_N])
    lv = A["log_v"][:k]
    rates = (
        pl.DataFrame(
            {
                "time_ps": A["log_t_ps"][:k],
                "qp": flow_qp[lv],
                "node_id": lv,
                "rate_bps": A["log_r_bps"][:k],
            }
        )
        if record_rates
        else pl.DataFrame()
    )
    return SimResult(
        node_start_ps=A["g_start_ps"].copy(),
        node_finish_ps=A["g_finish_ps"].copy(),
        counters=counters,
        flow_qp=flow_qp,
        sport=sport,
        routes=(A["r_off"], A["r_ports"]),
        rate_samples=rates,
        queue_samples=pl.DataFrame(),
        port_outputs=zero_port_outputs(topo.n_ports),
    )
