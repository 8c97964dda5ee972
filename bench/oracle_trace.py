"""The exact packet trace `bench/oracle_ceiling.py` counts from (one experiment, one process).

Runs an experiment of ``bench/generalization.py`` in packet mode, stopping the kernel every
``period`` of simulated time (the kernel stops at a time bound and carries on exactly where it
stopped, as ``bench/steadiness_census.py`` does), and records, for every fabric flow (QP) active
at that moment, the bytes it has sent (``qp_nxt``, the next byte to send) and its congestion
control's rate (``qp_rate_bps``: what the rate monitor records as ``cc_rate`` for every cc of the
suite; Swift, whose ``cc_rate`` is its window per RTT, is not in the suite). It also keeps each
QP's start (``qp_start``), finish (its DAG node's finish: the ACK of its last byte), size, data
route and base RTT, the ports' rates, and the run's default Wormhole window span.

Usage (normally called by ``oracle_ceiling.py``)::

    python bench/oracle_trace.py EXPERIMENT SCALE OUT.npz [--period-us 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import generalization as gen
import numpy as np


def collect(name: str, scale: float, period_ps: int) -> dict[str, np.ndarray]:
    """Run ``name`` at ``scale`` in packet mode; return the trace arrays (see the docstring)."""
    from wormsim.netsim.packet import state as st
    from wormsim.netsim.packet.engine import init_kernel, run_kernel
    from wormsim.netsim.packet.run import _base_rtts, _params, _warm, build_state
    from wormsim.netsim.sim_spec import WormholeSpec

    cfg, _, arrays, topo = gen.build_inputs(gen._BY_NAME[name], scale)
    net = cfg.network
    A, P, flow_qp, _ = build_state(arrays, topo, net, routing=cfg.sim.routing, seed=cfg.sim.seed)
    S = st.make_state(A)
    _warm()
    wh = WormholeSpec()
    Pw = _params(net, topo, 0, wh)  # the default window span of this cc (DCQCN: 2 timers)
    nq = int(A["qp_size"].shape[0])
    r_off, r_ports = A["r_off"].copy(), A["r_ports"].copy()
    rtt = _base_rtts(topo, r_off, r_ports, nq, Pw)
    t0 = time.perf_counter()
    init_kernel(S, P, 0)
    never = np.iinfo(np.int64).max
    heap_margin = 64 + int(np.diff(arrays.child_offsets).max(initial=0)) * 2
    ts, qs, sent, rate = [], [], [], []
    t = 0
    events_tail = 0
    while True:
        status = run_kernel(S, P, t + period_ps, 64, heap_margin, never)
        if status == st.RUN_NEEDS_ROOM:
            A = st.grow_pool(A) if A["cnt"][st.C_FREE] < 64 else st.grow_heap(A)
            S = st.make_state(A)
            continue
        if status != st.RUN_STOPPED:
            break
        t += period_ps
        (act,) = np.nonzero((A["qp_start_ps"] >= 0) & (A["qp_done"] == 0))
        if act.size:
            ts.append(np.full(act.size, t, np.int64))
            qs.append(act.astype(np.int32))
            sent.append(A["qp_nxt"][act].copy())
            rate.append(A["qp_rate_bps"][act].astype(np.float32))
        events_tail = int(A["cnt"][st.C_EVENTS])
    wall = time.perf_counter() - t0
    cat = np.concatenate

    def c(xs, dt):
        return cat(xs) if xs else np.zeros(0, dt)

    qp_node = A["qp_node"].copy()
    counters = {
        "events_processed": int(A["cnt"][st.C_EVENTS]),
        "sim_wall_s": round(wall, 2),
        "sim_end_ps": int(A["cnt"][st.C_NOW]),
        "events_before_end": events_tail,
        "cc": net.cc,
        "topology": cfg.cluster.topology,
        "oversubscription": getattr(cfg.cluster, "oversubscription", 1),
        "routing": cfg.sim.routing,
    }
    return {
        "period_ps": np.int64(period_ps),
        "window_ps": np.int64(Pw.wh_window * Pw.wh_ps),
        "qp_start": A["qp_start_ps"].copy(),
        "qp_finish": A["g_finish_ps"][qp_node].copy(),
        "qp_size": arrays.size_bytes[qp_node].astype(np.int64),
        "qp_rtt": rtt.astype(np.int64),
        "qp_node": qp_node,
        "r_off": r_off,
        "r_ports": r_ports,
        "port_rate_bps": topo.port_rate_bps.astype(np.float64),
        "port_is_switch": topo.is_switch[topo.port_node].astype(np.int8),
        "n_qps": np.int64(nq),
        "n_flow_nodes": np.int64(int((flow_qp >= 0).sum())),
        "iteration_ps": np.int64(int(A["g_finish_ps"].max())),
        "s_t": c(ts, np.int64),
        "s_q": c(qs, np.int32),
        "s_sent": c(sent, np.int64),
        "s_rate": c(rate, np.float32),
        "counters": np.array(json.dumps(counters)),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment")
    p.add_argument("scale", type=float)
    p.add_argument("out", type=Path)
    p.add_argument("--period-us", type=float, default=5.0)
    a = p.parse_args()
    tr = collect(a.experiment, a.scale, int(a.period_us * 1e6))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **tr)
    tmp.rename(a.out)
    print(json.dumps({"experiment": a.experiment, **json.loads(str(tr["counters"]))}), flush=True)


if __name__ == "__main__":
    main()
