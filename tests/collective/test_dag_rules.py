"""Contract and dependency rules of the expanded DAG."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from _ops import OpsBuilder

from wormsim.collective import CollectiveError, CollectiveSpec, expand_dag
from wormsim.collective.dag import DAG_SCHEMA, DagError, dag_to_arrays, validate_dag

MiB = 1 << 20


def mixed_ops() -> tuple[pl.DataFrame, dict[int, set[int]]]:
    """Two servers of 4: TP all-reduces, DP rings, PP send/recv, all-to-all, compute chains."""
    b = OpsBuilder()
    members: dict[int, set[int]] = {}
    last = {r: b.compute(r) for r in range(8)}
    for ranks in ([0, 1, 2, 3], [4, 5, 6, 7]):
        ids = b.coll("allreduce", ranks, 3 * MiB, group="tp", deps={r: [last[r]] for r in ranks})
        for r, o in ids.items():
            members[o] = set(ranks)
            last[r] = b.compute(r, deps=[o])
    for ranks, kind in (([0, 4], "allreduce"), ([1, 5], "reducescatter"), ([2, 6], "allgather")):
        ids = b.coll(kind, ranks, 8 * MiB, deps={r: [last[r]] for r in ranks})
        for r, o in ids.items():
            members[o] = set(ranks)
            last[r] = b.compute(r, deps=[o])
    ids = b.coll(
        "alltoall", list(range(8)), 4 * MiB, group="ep", deps={r: [last[r]] for r in range(8)}
    )
    for r, o in ids.items():
        members[o] = set(range(8))
        last[r] = b.compute(r, deps=[o])
    s, rv = b.p2p(3, 7, MiB, send_deps=[last[3]], recv_deps=[last[7]])
    members[s] = members[rv] = {3, 7}
    ids = b.coll("allreduce", [0, 1, 4, 5], 64 * 1024, deps={r: [last[r]] for r in (0, 1, 4, 5)})
    for o in ids.values():
        members[o] = {0, 1, 4, 5}
    return b.frame(), members


SPECS = [
    CollectiveSpec(),
    CollectiveSpec(intra_node="step"),
    CollectiveSpec(granularity="nccl_chunks", p2p_chunk_bytes=256 * 1024),
    CollectiveSpec(allreduce="tree"),
    CollectiveSpec(allreduce="halving_doubling"),
    CollectiveSpec(allreduce="hierarchical"),
    CollectiveSpec(allreduce="hierarchical", intra_node="step", granularity="nccl_chunks"),
]


@pytest.mark.parametrize("spec", SPECS)
def test_contract_acyclic_reachable_members(spec: CollectiveSpec) -> None:
    ops, members = mixed_ops()
    dag = expand_dag(ops, (4, 8), spec)
    assert dag.schema == pl.Schema(DAG_SCHEMA)
    arr = dag_to_arrays(dag)  # dense ids, deps in range
    validate_dag(arr)  # acyclic: every node can start
    # every op id is its own node, with the right kind
    head = dag.head(ops.height)
    assert head["op_id"].to_list() == ops["op_id"].to_list()
    assert head["node_id"].to_list() == ops["op_id"].to_list()
    want = ops["kind"].replace_strict({"compute": "compute", "comm": "delay"})
    assert head["kind"].to_list() == want.to_list()
    # every generated node has a parent-to-be-waited-for path to an op: it has children
    children = np.diff(arr.child_offsets)
    assert np.all(children[ops.height :] > 0)
    # flow endpoints are members of the collective
    f = dag.filter(pl.col("kind") == "flow")
    for op, s, d in f.select("op_id", "src", "dst").iter_rows():
        assert s in members[op] and d in members[op] and s != d
    assert f["size_bytes"].min() >= 0
    assert (dag.filter(pl.col("kind") != "flow")["src"] == -1).all()


def test_compute_nodes_copy_ops() -> None:
    ops, _ = mixed_ops()
    dag = expand_dag(ops, (4, 8))
    comp = ops.filter(pl.col("kind") == "compute")
    got = dag.filter(pl.col("kind") == "compute")
    assert got["deps"].to_list() == comp["deps"].to_list()
    assert got["rank"].to_list() == comp["rank"].to_list()
    assert got["duration_ps"].to_list() == comp["duration_ps"].to_list()


def _flow_index(dag: pl.DataFrame) -> dict[tuple[int, int, int], int]:
    f = dag.filter(pl.col("kind") == "flow")
    return {
        (s, st, ch): i for i, s, st, ch in f.select("node_id", "src", "step", "channel").iter_rows()
    }


def test_ring_step_rules() -> None:
    n, gpn = 16, 8
    b = OpsBuilder()
    pre = {r: b.compute(r) for r in range(n)}
    ids = b.coll("allreduce", list(range(n)), 64 * MiB, deps={r: [pre[r]] for r in range(n)})
    dag = expand_dag(b.frame(), (gpn, n), CollectiveSpec(allreduce="ring"))
    f = dag.filter(pl.col("kind") == "flow")
    steps = 2 * (n - 1)
    assert sorted(f["step"].unique().to_list()) == list(range(steps))
    nch = f["channel"].n_unique()
    assert nch == 2
    assert f.height == steps * n * nch
    deps = dict(dag.select("node_id", "deps").iter_rows())
    by = _flow_index(dag)
    # who sends to whom on each channel (the ring order)
    nxt = {
        (s, c): d
        for s, d, c in f.filter(pl.col("step") == 0).select("src", "dst", "channel").iter_rows()
    }
    prv = {(d, c): s for (s, c), d in nxt.items()}
    for (src, step, ch), node in by.items():
        if step == 0:
            assert deps[node] == [pre[src]]
        else:
            into = by[(prv[(src, ch)], step - 1, ch)]
            out = by[(src, step - 1, ch)]
            assert sorted(deps[node]) == sorted([into, out])
    for r, op in ids.items():
        want = {by[(r, steps - 1, c)] for c in range(nch)}
        want |= {by[(prv[(r, c)], steps - 1, c)] for c in range(nch)}
        assert set(deps[op]) == want
    # channels enter/leave a server through different GPUs
    exits = {
        c: {s for (s, cc), d in nxt.items() if cc == c and s // gpn != d // gpn} for c in range(nch)
    }
    assert exits[0].isdisjoint(exits[1])


def test_intra_node_aggregate_and_latency() -> None:
    n = 8
    b = OpsBuilder()
    pre = {r: b.compute(r) for r in range(n)}
    ids = b.coll(
        "allreduce", list(range(n)), 8 * MiB, group="tp", deps={r: [pre[r]] for r in range(n)}
    )
    spec = CollectiveSpec()
    dag = expand_dag(b.frame(), (8, 8), spec)
    f = dag.filter(pl.col("kind") == "flow")
    assert f.height == n  # one flow per ring edge
    gate = dag.filter((pl.col("kind") == "delay") & (pl.col("node_id") >= b.frame().height))
    assert gate.height == 1
    assert sorted(gate["deps"][0]) == sorted(pre.values())  # all members arrived
    assert all(d == [gate["node_id"][0]] for d in f["deps"].to_list())
    done = dag.filter(pl.col("node_id").is_in(list(ids.values())))
    lat = round(spec.nvlink_step_latency_ns * 1000) * 2 * (n - 1)
    assert done["duration_ps"].to_list() == [lat] * n
    assert all(len(d) == 2 for d in done["deps"].to_list())


def test_network_collective_has_no_latency() -> None:
    b = OpsBuilder()
    ids = b.coll("allreduce", [0, 8], MiB)
    dag = expand_dag(b.frame(), (8, 16))
    assert dag.filter(pl.col("node_id").is_in(list(ids.values())))["duration_ps"].to_list() == [
        0,
        0,
    ]


def test_send_recv_rules() -> None:
    b = OpsBuilder()
    a = b.compute(2)
    c = b.compute(9)
    s, r = b.p2p(2, 9, MiB, send_deps=[a], recv_deps=[c])
    dag = expand_dag(b.frame(), (8, 16))
    deps = dict(dag.select("node_id", "deps").iter_rows())
    flow = dag.filter(pl.col("kind") == "flow")["node_id"].to_list()
    assert len(flow) == 1
    assert deps[flow[0]] == [a]
    assert deps[s] == flow
    assert sorted(deps[r]) == sorted([flow[0], c])
    row = dag.filter(pl.col("kind") == "flow").row(0, named=True)
    assert (row["op_id"], row["algorithm"], row["layer"], row["microbatch"]) == (s, "p2p", 3, 1)


def test_crossed_send_recv_deadlock_is_a_cycle() -> None:
    b = OpsBuilder()
    # both ranks first receive, then send what the other waits for
    cid_a, cid_b = 0, 1
    b.next_coll = 2
    ra = b._row(0, collective="recv", group="pp", coll_id=cid_a, peer=1, size_bytes=MiB)
    rb = b._row(1, collective="recv", group="pp", coll_id=cid_b, peer=0, size_bytes=MiB)
    b._row(1, collective="send", group="pp", coll_id=cid_a, peer=0, size_bytes=MiB, deps=[rb])
    b._row(0, collective="send", group="pp", coll_id=cid_b, peer=1, size_bytes=MiB, deps=[ra])
    dag = expand_dag(b.frame(), (8, 8))
    with pytest.raises(DagError, match="cycle"):
        validate_dag(dag_to_arrays(dag))


def test_collective_waiting_on_itself_is_a_cycle() -> None:
    b = OpsBuilder()
    x = b.compute(0)
    ids = b.coll("allreduce", [0, 8], MiB, deps={0: [x]})
    b.rows[x]["deps"] = [ids[8]]  # rank 0's input waits for rank 8's completion
    with pytest.raises(DagError):
        validate_dag(dag_to_arrays(expand_dag(b.frame(), (8, 16))))


def test_group_of_one_passes_deps_through() -> None:
    b = OpsBuilder()
    x = b.compute(0)
    ids = b.coll("allreduce", [0], MiB, deps={0: [x]})
    dag = expand_dag(b.frame(), (8, 8))
    assert dag.filter(pl.col("kind") == "flow").height == 0
    assert dag["deps"][ids[0]].to_list() == [x]


def test_tree_step_rules() -> None:
    b = OpsBuilder()
    pre = {r: b.compute(r) for r in range(8)}
    b.coll("allreduce", list(range(8)), 2 * MiB, deps={r: [pre[r]] for r in range(8)})
    spec = CollectiveSpec(allreduce="tree")
    dag = expand_dag(b.frame(), (2, 8), spec)
    f = dag.filter(pl.col("kind") == "flow")
    k = 2 * MiB // 2 // spec.tree_chunk_bytes
    deps = dict(dag.select("node_id", "deps").iter_rows())
    ids = {
        (s, d, st, ch): i
        for i, s, d, st, ch in f.select("node_id", "src", "dst", "step", "channel").iter_rows()
    }
    for (s, d, st, ch), node in ids.items():
        if 0 < st < k or st > k:  # later chunks wait for the previous chunk on the edge
            assert ids[(s, d, st - 1, ch)] in deps[node]
        if st == 0:
            assert pre[s] in deps[node]
        if k <= st:  # a down flow waits for chunk st-k to have reached its sender
            parents = [
                i
                for (a, bb, t2, c2), i in ids.items()
                if bb == s and c2 == ch and t2 in (st, st - k)
            ]
            assert set(parents) & set(deps[node])


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda rows: rows[1].update(rank=0), "twice"),
        (lambda rows: rows[1].update(size_bytes=5), "size_bytes"),
        (lambda rows: rows[1].update(collective="allgather"), "different collectives"),
        (lambda rows: rows[1].update(collective="bogus"), "not one of"),
        (lambda rows: rows[1].update(rank=99), "outside"),
        (lambda rows: rows[1].update(op_id=7), "dense"),
    ],
)
def test_bad_ops_raise_collective_error(mutate, match: str) -> None:  # noqa: ANN001
    b = OpsBuilder()
    b.coll("allreduce", [0, 1, 2], MiB)
    mutate(b.rows)
    with pytest.raises(CollectiveError, match=match):
        expand_dag(b.frame(), (4, 8))


def test_broken_p2p_raises() -> None:
    b = OpsBuilder()
    b.p2p(0, 1, MiB)
    b.rows[1]["peer"] = 5
    with pytest.raises(CollectiveError, match="peer"):
        expand_dag(b.frame(), (4, 8))
