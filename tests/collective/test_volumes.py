"""Per-rank byte volumes against the published alpha-beta arithmetic (reference §9)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from _ops import OpsBuilder

from wormsim.collective import CollectiveSpec, expand_dag

MiB = 1 << 20


def flows(dag: pl.DataFrame) -> pl.DataFrame:
    return dag.filter(pl.col("kind") == "flow")


def sent_by(dag: pl.DataFrame) -> dict[int, int]:
    f = flows(dag).group_by("src").agg(pl.col("size_bytes").sum())
    return dict(zip(f["src"].to_list(), f["size_bytes"].to_list(), strict=True))


def recv_by(dag: pl.DataFrame) -> dict[int, int]:
    f = flows(dag).group_by("dst").agg(pl.col("size_bytes").sum())
    return dict(zip(f["dst"].to_list(), f["size_bytes"].to_list(), strict=True))


RING_CASES = [
    # (ranks, gpus_per_node, spec)
    (list(range(8)), 8, CollectiveSpec()),  # intra, aggregated
    (list(range(8)), 8, CollectiveSpec(intra_node="step")),
    (list(range(16)), 8, CollectiveSpec(allreduce="ring")),  # 2 servers, 2 channels
    (list(range(16)), 8, CollectiveSpec(allreduce="ring", max_channels=4)),
    (list(range(0, 32, 8)), 8, CollectiveSpec(allreduce="ring")),  # one per server
    (list(range(16)), 8, CollectiveSpec(allreduce="ring", granularity="nccl_chunks")),
    (list(range(8)), 8, CollectiveSpec(intra_node="step", granularity="nccl_chunks")),
]


@pytest.mark.parametrize(("ranks", "gpn", "spec"), RING_CASES)
@pytest.mark.parametrize("kind", ["allreduce", "reducescatter", "allgather"])
def test_ring_bytes_per_rank(ranks: list[int], gpn: int, spec: CollectiveSpec, kind: str) -> None:
    n = len(ranks)
    size = 96 * MiB  # divisible by n * channels * loops for every case
    b = OpsBuilder()
    b.coll(kind, ranks, size)
    dag = expand_dag(b.frame(), (gpn, 32), spec)
    factor = 2 if kind == "allreduce" else 1
    expect = factor * (n - 1) * size // n
    assert sent_by(dag) == {r: expect for r in ranks}
    assert recv_by(dag) == {r: expect for r in ranks}
    assert set(flows(dag)["algorithm"].unique()) == {"ring"}


def test_ring_nccl_chunks_respects_chunk_size() -> None:
    b = OpsBuilder()
    b.coll("allreduce", list(range(16)), 96 * MiB)
    dag = expand_dag(
        b.frame(), (8, 16), CollectiveSpec(allreduce="ring", granularity="nccl_chunks")
    )
    f = flows(dag)
    assert f["size_bytes"].max() <= 2 * MiB
    loops = -(-96 * MiB // (2 * 16 * 2 * MiB))
    assert f.height == loops * 2 * 15 * 16 * 2


@pytest.mark.parametrize("size", [1_000_003, 7 * MiB + 5])
def test_ring_total_bytes_exact_for_uneven_sizes(size: int) -> None:
    b = OpsBuilder()
    b.coll("allreduce", list(range(12)), size)
    for spec in (CollectiveSpec(allreduce="ring"), CollectiveSpec(granularity="nccl_chunks")):
        dag = expand_dag(b.frame(), (4, 12), spec)
        assert int(flows(dag)["size_bytes"].sum()) == 2 * 11 * size


def test_tree_each_non_root_rank_sends_s_up_and_receives_s_down() -> None:
    size = 4 * MiB
    n_servers, g = 4, 2
    ranks = list(range(n_servers * g))
    b = OpsBuilder()
    b.coll("allreduce", ranks, size)
    spec = CollectiveSpec(allreduce="tree")
    dag = expand_dag(b.frame(), (g, len(ranks)), spec)
    f = flows(dag)
    assert set(f["algorithm"].unique()) == {"tree"}
    n = len(ranks)
    assert int(f["size_bytes"].sum()) == 2 * (n - 1) * size  # each tree edge: S/2 up + S/2 down
    chunks = size // 2 // spec.tree_chunk_bytes
    up = f.filter(pl.col("step") < chunks)
    down = f.filter(pl.col("step") >= chunks)
    up_sent = dict(up.group_by("src").agg(pl.col("size_bytes").sum()).iter_rows())
    down_recv = dict(down.group_by("dst").agg(pl.col("size_bytes").sum()).iter_rows())
    roots = {0, (n_servers - 1) * g}  # head of server 0 (tree 0) and of server N-1 (tree 1)
    for r in ranks:
        if r not in roots:
            assert up_sent[r] == size and down_recv[r] == size  # 2S per GPU (nccl#457)
    for r in roots:
        assert up_sent[r] == size // 2 and down_recv[r] == size // 2


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_halving_doubling_power_of_two(n: int) -> None:
    size = 64 * MiB
    b = OpsBuilder()
    b.coll("allreduce", list(range(n)), size)
    dag = expand_dag(b.frame(), (1, n), CollectiveSpec(allreduce="halving_doubling"))
    expect = 2 * (n - 1) * size // n
    assert sent_by(dag) == {r: expect for r in range(n)}
    assert recv_by(dag) == {r: expect for r in range(n)}
    assert flows(dag)["step"].n_unique() == 2 * int(np.log2(n))


@pytest.mark.parametrize("n", [3, 6, 7, 12])
def test_halving_doubling_non_power_of_two(n: int) -> None:
    size = 64 * MiB
    p = 1 << int(np.floor(np.log2(n)))
    rem = n - p
    b = OpsBuilder()
    b.coll("allreduce", list(range(n)), size)
    dag = expand_dag(b.frame(), (1, n), CollectiveSpec(allreduce="halving_doubling"))
    assert int(flows(dag)["size_bytes"].sum()) == 2 * (p - 1) * size + 2 * rem * size
    sent = sent_by(dag)
    for r in range(2 * rem, n):
        assert sent[r] == 2 * (p - 1) * size // p
    for r in range(0, 2 * rem, 2):
        assert sent[r] == size  # the pre step


def test_hierarchical_cuts_inter_server_bytes_by_g() -> None:
    size = 96 * MiB
    n_servers, g = 4, 8
    ranks = list(range(n_servers * g))
    b = OpsBuilder()
    b.coll("allreduce", ranks, size)
    dag = expand_dag(b.frame(), (g, len(ranks)), CollectiveSpec(allreduce="hierarchical"))
    f = flows(dag).with_columns(inter=(pl.col("src") // g) != (pl.col("dst") // g))
    inter = dict(f.filter("inter").group_by("src").agg(pl.col("size_bytes").sum()).iter_rows())
    intra = dict(
        f.filter(~pl.col("inter")).group_by("src").agg(pl.col("size_bytes").sum()).iter_rows()
    )
    for r in ranks:
        assert inter[r] == 2 * (n_servers - 1) * (size // g) // n_servers
        assert intra[r] == 2 * (g - 1) * size // g
    flat = b.frame()
    ring = flows(
        expand_dag(flat, (g, len(ranks)), CollectiveSpec(allreduce="ring", max_channels=1))
    )
    ring_inter = ring.filter((pl.col("src") // g) != (pl.col("dst") // g))["size_bytes"].sum()
    hier_inter = f.filter("inter")["size_bytes"].sum()
    # flat ring: N crossings of 2(n-1)/n S; hierarchical: g rails x N crossings of 2(N-1)/N S/g
    n = len(ranks)
    assert ring_inter == n_servers * 2 * (n - 1) * size // n
    assert hier_inter == n_servers * 2 * (n_servers - 1) * size // n_servers


def test_alltoall_even_split() -> None:
    n, size = 8, 8 * MiB
    b = OpsBuilder()
    b.coll("alltoall", list(range(n)), size, group="ep")
    dag = expand_dag(b.frame(), (4, n))
    assert sent_by(dag) == {r: (n - 1) * size // n for r in range(n)}
    f = flows(dag)
    assert f.height == n * (n - 1)
    assert set(f["algorithm"].unique()) == {"direct"}
    assert f.filter(pl.col("src") == pl.col("dst")).height == 0


def test_alltoall_uneven_split_exact() -> None:
    ranks = [1, 3, 4, 6]
    n = len(ranks)
    rng = np.random.default_rng(3)
    mat = rng.integers(0, 10_000, size=(n, n))
    split = {r: mat[i].tolist() for i, r in enumerate(ranks)}
    sizes = {r: int(mat[i].sum()) for i, r in enumerate(ranks)}
    b = OpsBuilder()
    b.coll("alltoall", ranks, 0, group="ep", split=split, sizes=sizes)
    f = flows(expand_dag(b.frame(), (2, 8)))
    got = {(s, d): z for s, d, z in f.select("src", "dst", "size_bytes").iter_rows()}
    for i, s in enumerate(ranks):
        for j, d in enumerate(ranks):
            if i != j:
                assert got[(s, d)] == mat[i, j]


def test_send_recv_one_flow() -> None:
    b = OpsBuilder()
    b.p2p(3, 11, 5 * MiB + 1)
    f = flows(expand_dag(b.frame(), (8, 16)))
    assert f.select("src", "dst", "size_bytes").rows() == [(3, 11, 5 * MiB + 1)]
    assert f["collective"].to_list() == ["send"]


def test_send_recv_chunked() -> None:
    b = OpsBuilder()
    b.p2p(3, 11, 5 * MiB + 1)
    f = flows(expand_dag(b.frame(), (8, 16), CollectiveSpec(p2p_chunk_bytes=MiB)))
    assert f.height == 6
    assert int(f["size_bytes"].sum()) == 5 * MiB + 1
    assert f["size_bytes"].max() <= MiB
