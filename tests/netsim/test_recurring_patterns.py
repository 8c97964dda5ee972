"""Memo hits on the patterns a training iteration repeats: a pipeline send between stages 0 and 1
has the contention pattern of the one between stages 1 and 2 (and of every micro-batch's), so
after the first settles the others replay it."""

from __future__ import annotations

import numpy as np

from wormsim.collective.dag import KIND_FLOW, dag_to_arrays
from wormsim.collective.expand import expand_dag
from wormsim.experiment.config import parse_experiment
from wormsim.memo import MemoStore
from wormsim.netsim.fabric.builders import build_topology
from wormsim.netsim.network_config import NetworkSpec
from wormsim.netsim.packet.run import run_packet
from wormsim.netsim.wormhole.spec import WormholeSpec
from wormsim.workload.builder import build_ops

PIPELINE = {
    "name": "pp4",
    "model": {
        "num_layers": 4,
        "hidden_size": 4096,
        "num_heads": 32,
        "vocab_size": 64,
        "seq_length": 1024,
    },
    "parallel": {"tp": 1, "pp": 4, "global_batch": 4},
    "cluster": {"gpus": 4, "gpus_per_node": 1, "topology": "fat_tree"},
}


def test_a_pipeline_send_pattern_recurs_across_stages_and_hits(tmp_path):
    cfg = parse_experiment(PIPELINE)
    ops = build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)
    dag = dag_to_arrays(
        expand_dag(ops, (cfg.cluster.gpus_per_node, cfg.cluster.gpus), cfg.collective)
    )
    topo, net = build_topology(cfg.cluster), NetworkSpec(cc="hpcc")
    flows = np.flatnonzero(dag.kind == KIND_FLOW)
    pairs = {(int(dag.src[v]), int(dag.dst[v])) for v in flows}
    # forward and backward sends between neighbouring stages (and the embedding all-reduce
    # between the first and the last stage)
    assert {(0, 1), (1, 2), (2, 3), (1, 0), (2, 1), (3, 2)} <= pairs
    ref = run_packet(dag, topo, net)
    with MemoStore(tmp_path / "m.sqlite") as store:
        r = run_packet(dag, topo, net, wormhole=WormholeSpec(), memo_store=store)
    c = r.counters
    assert c["memo_inserts"] >= 1
    # 4 micro-batches x 6 sends (+ the embedding all-reduce): measured 15 hits of 26 lookups
    assert c["memo_hits"] >= len(flows) // 3
    fct = lambda x: (x.node_finish_ps - x.node_start_ps)[flows].astype(float)  # noqa: E731
    err = np.abs(fct(r) - fct(ref)) / fct(ref)
    assert err.mean() < 0.01
    it_err = abs(r.node_finish_ps.max() - ref.node_finish_ps.max()) / ref.node_finish_ps.max()
    assert it_err < 0.005
    assert c["events_processed"] < 0.5 * ref.counters["events_processed"]
