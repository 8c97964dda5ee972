"""Per-collective figures against analytic expectations: a ring all-reduce's bus bandwidth on an
idle non-blocking fabric is the link's goodput, a 1F1B pipeline's bubble is (p-1)/(m+p-1), and
the idle-fabric replay cuts every instance off from the rest of the DAG."""

from __future__ import annotations

import polars as pl
import pytest

import wormsim
from wormsim.analysis.collectives import _chained_dag, busbw_factor
from wormsim.netsim.fabric.paths import HEADER_BYTES

LINK_GBPS = 100.0


def _dp_ring(gpus: int, hidden: int) -> dict:
    """A data-parallel-only job on a non-blocking fat-tree: its traffic is the gradient
    all-reduce (ring over the fabric, one GPU per server)."""
    return {
        "name": "dp-ring",
        "model": {
            "num_layers": 2,
            "hidden_size": hidden,
            "num_heads": 8,
            "vocab_size": 64,
            "seq_length": 128,
        },  # fmt: skip
        "parallel": {"tp": 1, "pp": 1, "global_batch": gpus},
        "cluster": {
            "gpus": gpus,
            "gpus_per_node": 1,
            "topology": "fat_tree",
            "host_link_gbps": LINK_GBPS,
            "fabric_link_gbps": LINK_GBPS,
        },  # fmt: skip
    }


@pytest.mark.parametrize("factor_n", [(2, 1.0), (8, 1.75), (1, 0.0)])
def test_busbw_factors_are_nccl_tests(factor_n):
    n, want = factor_n
    assert busbw_factor("allreduce", n) == pytest.approx(want)
    assert busbw_factor("allgather", 8) == pytest.approx(7 / 8)
    assert busbw_factor("sendrecv", 2) == 1.0


def test_ring_allreduce_busbw_is_the_link_goodput_on_an_idle_fabric():
    run = wormsim.run(_dp_ring(8, 1024), mode="flow")
    ar = run.collectives.filter(pl.col("collective") == "allreduce")
    assert ar.height >= 1 and (ar["ranks_count"] == 8).all()
    payload = run.config.network.payload_size_bytes
    goodput_GBps = LINK_GBPS / 8 * payload / (payload + HEADER_BYTES)
    alone_busbw = ar["size_bytes"] / ar["alone_us"] / 1e3 * busbw_factor("allreduce", 8)
    # within a few percent: each of the 2(n-1) ring steps adds a round trip
    assert alone_busbw.to_list() == pytest.approx([goodput_GBps] * ar.height, rel=0.05)
    assert (alone_busbw <= goodput_GBps * 1.0001).all()  # never faster than the wire
    # the only traffic of the iteration: in the run it is as fast as alone
    assert ar["slowdown_x"].to_list() == pytest.approx([1.0] * ar.height, rel=0.01)
    assert ar["busbw_GBps"].to_list() == pytest.approx(alone_busbw.to_list(), rel=0.01)


@pytest.mark.parametrize("stages,microbatches", [(2, 4), (4, 8)])
def test_pipeline_bubble_is_the_1f1b_fraction(stages, microbatches):
    """With a network too fast to matter, every rank of a balanced 1F1B pipeline idles
    (p-1)/(m+p-1) of the iteration: bubble, idle and the tiny pipeline transfers."""
    exp = {
        "name": "pp",
        "model": {
            "num_layers": 8,
            "hidden_size": 1024,
            "num_heads": 8,
            "vocab_size": 64,
            "seq_length": 512,
        },  # fmt: skip
        "parallel": {"tp": 1, "pp": stages, "global_batch": microbatches, "micro_batch": 1},
        "cluster": {
            "gpus": stages,
            "gpus_per_node": 1,
            "topology": "fat_tree",
            "host_link_gbps": 100_000,
            "fabric_link_gbps": 100_000,
        },  # fmt: skip
    }
    run = wormsim.run(exp, mode="flow", alone=False)
    t_us = run.iteration_time_s * 1e6
    waiting = run.ranks.select(
        (pl.col("bubble_us") + pl.col("idle_us") + pl.col("exposed_pp_us")) / t_us
    ).to_series()
    expect = (stages - 1) / (microbatches + stages - 1)
    assert waiting.to_list() == pytest.approx([expect] * stages, abs=0.02)
    assert (run.ranks["bubble_us"] > 0).all()


def test_replayed_instances_keep_only_their_own_dependencies():
    run = wormsim.run(_dp_ring(4, 256), mode="flow", alone=False)
    rep = run._report
    chosen = rep.collectives.sort("coll_id")["coll_id"].head(2).to_list()
    chained = _chained_dag(rep.run.dag, rep.run.ops, chosen)
    n_body = chained.height - len(chosen)
    assert chained["node_id"].to_list() == list(range(chained.height))
    deps = chained.explode("deps").drop_nulls("deps")
    k_of = dict(zip(chained["node_id"].to_list(), chained["k"].to_list(), strict=True))
    for node, dep, k in deps.select("node_id", "deps", "k").iter_rows():
        if node < n_body and dep < n_body:
            assert k_of[dep] == k  # no dependency crosses instances
        if dep >= n_body:
            assert dep - n_body == k  # a root waits for its own instance's gate
    gates = chained.tail(len(chosen))
    assert gates["deps"][0].to_list() == []  # the first instance starts at once
