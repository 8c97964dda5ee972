"""The NCCL-like selector and the config model."""

from __future__ import annotations

import polars as pl
import pytest
from _ops import OpsBuilder
from pydantic import ValidationError

from wormsim.collective import CollectiveSpec, expand_dag, select_algorithm
from wormsim.collective.selector import channels_for, collective_time_us

MiB = 1 << 20


def test_large_multi_node_allreduce_picks_ring() -> None:
    c = select_algorithm("allreduce", 1 << 30, 64, 8, CollectiveSpec())
    assert (c.algorithm, c.protocol, c.channels) == ("ring", "Simple", 2)


@pytest.mark.parametrize("size", [1024, 64 * 1024, MiB])
def test_small_multi_node_allreduce_picks_tree(size: int) -> None:
    assert select_algorithm("allreduce", size, 64, 8, CollectiveSpec()).algorithm == "tree"


def test_model_ring_vs_tree_times_cross_over() -> None:
    args = dict(n_ranks=64, n_servers=8, channels=2)
    small, large = 4096, 1 << 30
    t = {a: collective_time_us("allreduce", a, "Simple", small, **args) for a in ("ring", "tree")}
    assert t["tree"] < t["ring"]  # 2 log2(N) vs 2(n-1) latency terms
    t = {a: collective_time_us("allreduce", a, "Simple", large, **args) for a in ("ring", "tree")}
    assert t["ring"] < t["tree"]  # tree busBw capped at 0.92


def test_single_server_allreduce_is_ring_one_channel() -> None:
    c = select_algorithm("allreduce", 64 * MiB, 8, 1, CollectiveSpec(max_channels=8))
    assert (c.algorithm, c.channels) == ("ring", 1)


def test_forced_algorithm_honoured() -> None:
    for algo in ("ring", "tree", "halving_doubling", "hierarchical"):
        spec = CollectiveSpec(allreduce=algo)
        assert select_algorithm("allreduce", 4096, 64, 8, spec).algorithm == algo
        b = OpsBuilder()
        b.coll("allreduce", list(range(16)), 4096)
        dag = expand_dag(b.frame(), (8, 16), spec)
        assert set(dag.filter(pl.col("kind") == "flow")["algorithm"].unique()) == {algo}
        comm = dag.filter(pl.col("kind") == "delay").filter(pl.col("node_id") < 16)
        assert set(comm["algorithm"].unique()) == {algo}


def test_channels_shrink_for_small_messages() -> None:
    spec = CollectiveSpec(allreduce="ring", max_channels=4)
    assert select_algorithm("allreduce", 16 * 1024, 16, 2, spec).channels == 1
    assert select_algorithm("allreduce", 1 << 30, 16, 2, spec).channels == 4
    # Simple ring: 32 KiB per channel
    assert channels_for("ring", "Simple", 64 * 1024, 16, 32) == 2
    assert channels_for("ring", "Simple", MiB, 16, 32) == 32
    b = OpsBuilder()
    b.coll("allreduce", list(range(16)), 16 * 1024)
    b.coll("allreduce", list(range(16)), 256 * MiB)
    f = expand_dag(b.frame(), (8, 16), spec).filter(pl.col("kind") == "flow")
    per_op = f.group_by("op_id").agg(pl.col("channel").n_unique()).sort("op_id")
    assert per_op["channel"].to_list() == [1] * 16 + [4] * 16


def test_other_collectives() -> None:
    s = CollectiveSpec()
    assert select_algorithm("allgather", MiB, 16, 2, s).algorithm == "ring"
    assert select_algorithm("alltoall", MiB, 16, 2, s).algorithm == "direct"
    assert select_algorithm("send", MiB, 2, 2, s).algorithm == "p2p"


def test_spec_forbids_unknown_fields_and_bad_values() -> None:
    with pytest.raises(ValidationError):
        CollectiveSpec(allreduce="nvls")
    with pytest.raises(ValidationError):
        CollectiveSpec(channels=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        CollectiveSpec(max_channels=0)
    assert CollectiveSpec.model_validate({"granularity": "nccl_chunks"}).max_channels == 2
