"""Workload -> collective on real schedules: the DAG contract holds end to end."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wormsim.collective.dag import KIND_FLOW, dag_to_arrays, validate_dag
from wormsim.collective.expand import expand_dag
from wormsim.workload.builder import build_ops
from wormsim.workload.hardware import HardwareSpec
from wormsim.workload.model import ModelSpec
from wormsim.workload.parallel import ParallelSpec

DENSE = ModelSpec(num_layers=8, hidden_size=512, num_heads=8, vocab_size=64, seq_length=256)
MOE = ModelSpec(
    num_layers=4, hidden_size=256, num_heads=8, vocab_size=64, seq_length=128, num_experts=8
)

CASES = [
    ("dense tp2 pp2 dp2", DENSE, ParallelSpec(tp=2, pp=2, global_batch=8), 8, 4),
    (
        "sp + zero1",
        DENSE,
        ParallelSpec(tp=4, pp=2, sequence_parallel=True, zero_stage=1, global_batch=8),
        16,
        4,
    ),
    (
        "interleaved",
        DENSE,
        ParallelSpec(tp=2, pp=2, schedule="interleaved", virtual_stages=2, global_batch=8),
        8,
        2,
    ),
    ("cp ring", DENSE, ParallelSpec(tp=2, cp=2, global_batch=4), 8, 4),
    ("zero3", DENSE, ParallelSpec(tp=1, zero_stage=3, global_batch=4), 4, 2),
    ("moe tp1 ep4", MOE, ParallelSpec(tp=1, ep=4, global_batch=8, moe_routing_skew=0.5), 8, 4),
    (
        "moe tp2 etp2 ep2",
        MOE,
        ParallelSpec(tp=2, ep=2, sequence_parallel=True, pp=2, global_batch=4),
        8,
        2,
    ),
]


@pytest.mark.parametrize("name,model,par,gpus,gpn", CASES, ids=[c[0] for c in CASES])
def test_dag_is_acyclic_and_every_flow_reachable(name, model, par, gpus, gpn):
    ops = build_ops(model, par, HardwareSpec(), gpus)
    dag = expand_dag(ops, (gpn, gpus))
    arrays = dag_to_arrays(dag)
    validate_dag(arrays)  # acyclic: Kahn's algorithm releases every node, flows included
    # every op is a node with the same id
    assert np.array_equal(dag["node_id"][: ops.height].to_numpy(), ops["op_id"].to_numpy())
    flows = dag.filter(pl.col("kind") == "flow")
    assert flows.height > 0
    # every flow leads somewhere: some op's completion depends on it (directly or via flows)
    has_child = np.diff(arrays.child_offsets) > 0
    assert has_child[arrays.kind == KIND_FLOW].all()
    # bytes: all-to-all, send/recv and ring collectives conserve what the ops ask for
    sent = flows.group_by("src").agg(pl.col("size_bytes").sum())
    assert (sent["size_bytes"] > 0).all()


def test_flows_of_a_collective_stay_in_its_group():
    ops = build_ops(DENSE, ParallelSpec(tp=2, pp=2, global_batch=8), HardwareSpec(), 8)
    dag = expand_dag(ops, (4, 8))
    flows = dag.filter(pl.col("kind") == "flow").select("op_id", "src", "dst")
    coll = ops.select("op_id", "coll_id")
    members = ops.filter(pl.col("kind") == "comm").group_by("coll_id").agg(pl.col("rank"))
    joined = flows.join(coll, on="op_id").join(members, on="coll_id")
    ok = joined.select(
        pl.col("rank").list.contains(pl.col("src")) & pl.col("rank").list.contains(pl.col("dst"))
    )
    assert ok.to_series().all()
