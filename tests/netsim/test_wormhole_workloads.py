"""Wormhole against packet mode on a real training iteration (slow: about a minute each).

GPT-7B on 64 GPUs (the Wormhole paper's Table 1 row) at a tenth of its message sizes, on a fresh
memo store: every flow finishes, per-flow FCTs and the iteration time stay within the bounds
the project holds Wormhole to, and most events are skipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wormsim.collective.dag import KIND_FLOW, dag_to_arrays, scale_dag
from wormsim.collective.expand import expand_dag
from wormsim.experiment import load_experiment
from wormsim.memo import MemoStore
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.simulate import simulate
from wormsim.workload.builder import build_ops

ROOT = Path(__file__).resolve().parents[2]


def _scaled(workload: str, scale: float):
    cfg = load_experiment(ROOT / "examples" / "table1" / f"{workload}.yaml")
    ops = build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)
    dag = expand_dag(ops, (cfg.cluster.gpus_per_node, cfg.cluster.gpus), cfg.collective)
    return cfg, dag_to_arrays(scale_dag(dag, scale))


_DCQCN_GROUP = (
    "known (docs/wormhole.md): a 64-flow DCQCN group at 35.1 ms finishes in 1,268 us mirrored "
    "from one leader, 1,148-1,616 us (mean 1,497) in packet mode: 0.78 % in iteration time; "
    "0.05 % on ENGINE_MODEL 8, where every shadowed flow ran 0.8 % slow and hid it"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "cc",
    [
        "hpcc",
        pytest.param("dcqcn", marks=pytest.mark.xfail(strict=True, reason=_DCQCN_GROUP)),
    ],
)
def test_wormhole_tracks_packet_mode_on_gpt7b_64(cc, tmp_path):
    cfg, dag = _scaled("gpt7b-64", 0.1)
    topo, net = build_topology(cfg.cluster), NetworkSpec(cc=cc)
    ref = simulate(dag, topo, net, cfg.sim.model_copy(update={"mode": "packet"}))
    with MemoStore(tmp_path / "memo.sqlite") as store:
        wh = simulate(
            dag, topo, net, cfg.sim.model_copy(update={"mode": "wormhole"}), memo_store=store
        )
    flows = dag.kind == KIND_FLOW
    assert (ref.node_finish_ps >= 0).all() and (wh.node_finish_ps >= 0).all()
    f_ref = (ref.node_finish_ps - ref.node_start_ps)[flows].astype(float)
    f_wh = (wh.node_finish_ps - wh.node_start_ps)[flows].astype(float)
    ok = f_ref > 0
    assert np.mean(np.abs(f_wh[ok] - f_ref[ok]) / f_ref[ok]) < 0.01
    it_ref, it_wh = ref.node_finish_ps.max(), wh.node_finish_ps.max()
    assert abs(it_wh - it_ref) / it_ref < 0.005
    skipped = 1 - wh.counters["events_processed"] / ref.counters["events_processed"]
    assert skipped > 0.5, skipped
