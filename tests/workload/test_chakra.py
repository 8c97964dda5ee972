"""Chakra execution traces (wormsim.workload.chakra): ASTRA-sim's example traces import with
the bytes and dependencies they hold, an export re-imports to the same ops, bad traces are
refused with the file and node id."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from wormsim.experiment import parse_experiment
from wormsim.workload.builder import build_ops
from wormsim.workload.chakra import ChakraFormatError, chakra_to_ops, read_chakra
from wormsim.workload.chakra_export import ops_to_chakra, write_chakra
from wormsim.workload.chakra_schema import AttributeProto, GlobalMetadata, Node

from ..pipelines.conftest import invoke

DATA = Path(__file__).resolve().parents[1] / "data" / "chakra"
MICRO = {  # directory -> (prefix, ranks, Chakra CollectiveCommType)
    "all_reduce_8npus_1MB": ("all_reduce", 8, 0),
    "all_gather_4npus_1MB": ("all_gather", 4, 2),
    "all_to_all_16npus_1MB": ("all_to_all", 16, 6),
    "reduce_scatter_4npus_1MB": ("reduce_scatter", 4, 7),
}
TRAINING = {"resnet50_dp_8npus": "resnet50", "dlrm_hybrid_8npus": "dlrm"}


# ------------------------------------------------------------------ an independent wire decoder
def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = s = 0
    while True:
        v |= (b[i] & 0x7F) << s
        s += 7
        i += 1
        if b[i - 1] < 0x80:
            return v, i


def _fields(b: bytes) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) of a protobuf message, by the wire format alone."""
    out, i = [], 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i : i + n], i + n
        elif wt == 1:
            v, i = b[i : i + 8], i + 8
        else:
            v, i = b[i : i + 4], i + 4
        out.append((num, wt, v))
    return out


def _raw_nodes(path: Path) -> list[dict]:
    """Each Node of a .et file: id, type, deps, duration and int attributes (et_def.proto
    numbers: id 1, type 3, ctrl_deps 4, data_deps 5, duration_micros 7, attr 10; an attribute's
    name is field 1 and int64_val field 9, int32_val 7)."""
    data, i, msgs = path.read_bytes(), 0, []
    while i < len(data):
        n, i = _varint(data, i)
        msgs.append(data[i : i + n])
        i += n
    nodes = []
    for m in msgs[1:]:  # msgs[0] is the GlobalMetadata
        node = {"id": 0, "type": 0, "deps": set(), "duration": 0, "attrs": {}}
        for num, wt, v in _fields(m):
            if num == 1:
                node["id"] = v
            elif num == 3:
                node["type"] = v
            elif num in (4, 5):
                if wt == 2:  # packed
                    j = 0
                    while j < len(v):
                        d, j = _varint(v, j)
                        node["deps"].add(d)
                else:
                    node["deps"].add(v)
            elif num == 7:
                node["duration"] = v
            elif num == 10:
                f = {k: val for k, _, val in _fields(v)}
                if 9 in f or 7 in f:
                    node["attrs"][f[1].decode()] = f.get(9, f.get(7))
        nodes.append(node)
    return nodes


def _files(directory: str, prefix: str) -> list[Path]:
    d = DATA / directory
    return sorted(d.glob(f"{prefix}.*.et"), key=lambda p: int(p.name.split(".")[-2]))


# ------------------------------------------------------------------ ASTRA-sim's example traces
@pytest.mark.parametrize("directory", sorted(MICRO))
def test_astra_sim_microbenchmarks_import_with_their_bytes(directory: str):
    prefix, n, ctype = MICRO[directory]
    files = _files(directory, prefix)
    assert len(files) == n
    ops = chakra_to_ops(read_chakra(DATA / directory / prefix))
    assert ops.height == n and (ops["kind"] == "comm").all()
    assert ops["coll_id"].n_unique() == 1  # one collective over every rank
    for rank, path in enumerate(files):
        (raw,) = _raw_nodes(path)
        assert raw["type"] == 7 and raw["attrs"]["comm_type"] == ctype
        size = raw["attrs"]["comm_size"]
        # ASTRA-sim's all-gather gathers comm_size from every rank; ours is the full buffer
        want = size * n if ctype == 2 else size
        assert ops.filter(pl.col("rank") == rank)["size_bytes"].to_list() == [want]
    assert set(ops["collective"]) == {
        {0: "allreduce", 2: "allgather", 6: "alltoall", 7: "reducescatter"}[ctype]
    }


@pytest.mark.parametrize("directory", sorted(TRAINING))
def test_multi_layer_training_traces_keep_bytes_durations_and_dependencies(directory: str):
    prefix = TRAINING[directory]
    files = _files(directory, prefix)
    ops = chakra_to_ops(read_chakra(DATA / directory / prefix))
    assert ops["rank"].n_unique() == len(files) == 8
    for rank, path in enumerate(files):
        raw = _raw_nodes(path)
        mine = ops.filter(pl.col("rank") == rank)
        assert mine.height == len(raw)
        assert int(mine["deps"].list.len().sum()) == sum(len(r["deps"]) for r in raw)
        raw_comm = Counter(
            (r["attrs"]["comm_type"], r["attrs"]["comm_size"]) for r in raw if r["type"] == 7
        )
        names = {0: "allreduce", 6: "alltoall", 2: "allgather", 7: "reducescatter"}
        comm = mine.filter(pl.col("kind") == "comm")
        assert Counter(zip(comm["collective"], comm["size_bytes"], strict=True)) == Counter(
            {(names[t], s * (8 if t == 2 else 1)): k for (t, s), k in raw_comm.items()}
        )
        comp = mine.filter(pl.col("kind") == "compute")
        assert sorted(comp["duration_ps"]) == sorted(
            r["duration"] * 10**6 for r in raw if r["type"] == 4
        )
    # a dependency is always on an op of the same rank, earlier in its schedule
    by_id = dict(zip(ops["op_id"], zip(ops["rank"], ops["seq"], strict=True), strict=True))
    for op, rank, seq, deps in ops.select("op_id", "rank", "seq", "deps").iter_rows():
        assert all(by_id[d][0] == rank and by_id[d][1] < seq for d in deps), op


# ------------------------------------------------------------------ export
def _moe_ops() -> pl.DataFrame:
    cfg = parse_experiment({
        "model": {"num_layers": 4, "hidden_size": 256, "num_heads": 8, "vocab_size": 64,
                  "seq_length": 128, "num_experts": 4, "moe_top_k": 2},
        "parallel": {"tp": 2, "pp": 2, "ep": 2, "global_batch": 8, "sequence_parallel": True,
                     "moe_routing_skew": 1.0},
        "cluster": {"gpus": 16, "gpus_per_node": 4},
    })  # fmt: skip
    return build_ops(cfg.model, cfg.parallel, cfg.hardware, cfg.cluster.gpus)


def _same_instances(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    def parts(ops):
        c = ops.filter(pl.col("coll_id") >= 0)
        return {tuple(x) for x in c.group_by("coll_id").agg(pl.col("op_id").sort())["op_id"]}

    return parts(a) == parts(b)


def test_a_chakra_export_reimports_to_the_same_ops(tmp_path: Path):
    ops = _moe_ops().sort("rank", "seq")
    assert set(ops["collective"]) >= {"alltoall", "allgather", "reducescatter", "send", "recv"}
    files = write_chakra(ops, tmp_path / "moe")
    assert [f.name for f in files[-2:]] == ["moe.15.et", "comm_group.json"]
    back = chakra_to_ops(read_chakra(tmp_path / "moe")).sort("rank", "seq")
    for col in ops.columns:
        if col != "coll_id":
            assert back[col].to_list() == ops[col].to_list(), col
    assert _same_instances(ops, back)
    # what ASTRA-sim reads: comm_size of an all-gather is a rank's shard, groups are the members
    groups = json.loads((tmp_path / "comm_group.json").read_text())
    raw = _raw_nodes(tmp_path / "moe.0.et")
    mine = ops.filter(pl.col("rank") == 0)
    for r, op in zip(raw, mine.iter_rows(named=True), strict=True):
        assert r["deps"] == {ops.filter(pl.col("op_id") == d)["seq"][0] for d in op["deps"]}
        if op["collective"] == "allgather":
            n = ops.filter(pl.col("coll_id") == op["coll_id"]).height
            assert r["attrs"]["comm_size"] * n == op["size_bytes"]
        if op["collective"] in ("send", "recv"):
            assert (
                r["attrs"]["comm_src" if op["collective"] == "recv" else "comm_dst"] == op["peer"]
            )
    colls = ops.filter((pl.col("coll_id") >= 0) & ~pl.col("collective").is_in(["send", "recv"]))
    members = colls.group_by("coll_id").agg(pl.col("rank").sort())["rank"]
    assert sorted(map(tuple, groups.values())) == sorted({tuple(m) for m in members})


def test_export_and_import_commands(tmp_path: Path):
    r = invoke("workload", "import", DATA / "dlrm_hybrid_8npus" / "dlrm.0.et", "--format",
               "chakra", "-o", tmp_path / "imp")  # fmt: skip
    assert r.exit_code == 0, r.output
    r = invoke("workload", "export", tmp_path / "imp", "--format", "chakra", "-o",
               tmp_path / "exp" / "dlrm")  # fmt: skip
    assert r.exit_code == 0, r.output
    first = pl.read_parquet(tmp_path / "imp" / "ops.parquet")
    again = chakra_to_ops(read_chakra(tmp_path / "exp" / "dlrm"))
    for col in ("rank", "seq", "kind", "collective", "size_bytes", "duration_ps", "deps"):
        assert again[col].to_list() == first[col].to_list(), col
    man = json.loads((tmp_path / "imp" / "manifest.json").read_text())
    assert man["imported_from"]["format"] == "chakra"


def test_a_trace_runs_through_the_pipeline_stages(tmp_path: Path):
    exp = tmp_path / "exp.yaml"
    exp.write_text("model: gpt-13b\ncluster: {gpus: 8, gpus_per_node: 4}\nsim: {mode: flow}\n")
    run = tmp_path / "run"
    r = invoke("workload", "import", DATA / "resnet50_dp_8npus" / "resnet50", "--format",
               "chakra", "--experiment", exp, "-o", run)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert invoke("collective", "expand", run).exit_code == 0
    r = invoke("netsim", "run", run)
    assert r.exit_code == 0, r.output
    assert json.loads((run / "summary.json").read_text())["iteration_time_s"] > 0


# ------------------------------------------------------------------ bad traces
def _write(path: Path, nodes: list, version: str = "0.0.4") -> Path:
    blobs = [GlobalMetadata(version=version), *nodes]
    out = b""
    for m in blobs:
        b = m.SerializeToString()
        n, head = len(b), bytearray()
        while True:
            head.append((n & 0x7F) | (0x80 if n >> 7 else 0))
            n >>= 7
            if not n:
                break
        out += bytes(head) + b
    path.write_bytes(out)
    return path


def _coll(node_id: int, ctype: int, size: int, deps=()) -> Node:
    node = Node(id=node_id, name=f"c{node_id}", type=7, data_deps=list(deps))
    node.attr.extend([AttributeProto(name="comm_type", int64_val=ctype),
                      AttributeProto(name="comm_size", int64_val=size)])  # fmt: skip
    return node


@pytest.mark.parametrize(
    ("rank1", "match"),
    [
        ([_coll(1, 0, 64, deps=[7])], r"t\.1\.et: node 1 \('c1'\) depends on node 7"),
        ([_coll(1, 5, 64)], r"t\.1\.et: node 1 \('c1'\): collective BROADCAST is not modelled"),
        ([_coll(1, 0, 32)], r"t\.1\.et: node 1: allreduce of 32 bytes, but rank 0 issues"),
        ([], r"t\.0\.et: allreduce 'c1' has no counterpart on rank\(s\) \[1\]"),
        ([Node(id=1, name="m", type=2)], r"t\.1\.et: node 1 \('m'\) is a MEM_LOAD_NODE"),
        (
            [_coll(1, 0, 64, deps=[2]), _coll(2, 0, 64, deps=[1])],
            r"node 1 is on a dependency cycle",
        ),
    ],
)
def test_bad_traces_name_the_file_and_node(tmp_path: Path, rank1, match: str):
    _write(tmp_path / "t.0.et", [_coll(1, 0, 64)])
    _write(tmp_path / "t.1.et", rank1)
    with pytest.raises(ChakraFormatError, match=match):
        chakra_to_ops(read_chakra(tmp_path / "t"))


def test_truncated_and_missing_traces_exit_2(tmp_path: Path):
    good = _write(tmp_path / "t.0.et", [_coll(1, 0, 64)])
    good.write_bytes(good.read_bytes()[:-3])
    r = invoke("workload", "import", tmp_path / "t", "--format", "chakra", "-o", tmp_path / "r")
    assert r.exit_code == 2 and "t.0.et: message 1 at byte" in r.output and "truncated" in r.output
    r = invoke("workload", "import", tmp_path / "none", "--format", "chakra", "-o", tmp_path / "r")
    assert r.exit_code == 2 and "no Chakra trace" in r.output and "none.0.et" in r.output
    assert not (tmp_path / "r").exists() and "Traceback" not in r.output


def _import(tmp_path: Path, prefix: str, *extra: object):
    return invoke("workload", "import", tmp_path / prefix, "--format", "chakra", "-o",
                  tmp_path / "r", *extra)  # fmt: skip


def test_a_gap_in_the_ranks_exits_2_naming_the_missing_file(tmp_path: Path):
    import shutil

    trace = tmp_path / "trace"
    shutil.copytree(DATA / "all_reduce_8npus_1MB", trace)
    (trace / "all_reduce.3.et").unlink()
    r = _import(tmp_path, "trace/all_reduce")
    assert r.exit_code == 2, r.output
    assert "all_reduce.3.et is missing" in r.output and "all_reduce.4.et exists" in r.output
    assert not (tmp_path / "r").exists() and "Traceback" not in r.output
    # the pipeline refuses it too, before any run directory appears
    r = invoke("pipeline", "run", "--workload", trace / "all_reduce", "-o", tmp_path / "r",
               "--mode", "flow")  # fmt: skip
    assert r.exit_code == 2 and "all_reduce.3.et is missing" in r.output
    assert not (tmp_path / "r").exists()


def test_a_node_naming_a_peer_outside_the_trace_exits_2(tmp_path: Path):
    send = Node(id=1, name="s", type=5)
    send.attr.extend([AttributeProto(name="comm_dst", int64_val=7),
                      AttributeProto(name="comm_size", int64_val=64)])  # fmt: skip
    _write(tmp_path / "t.0.et", [send])
    _write(tmp_path / "t.1.et", [])
    r = _import(tmp_path, "t")
    assert r.exit_code == 2 and "t.0.et: node 1: comm_dst 7 must be another rank of 0..1" in (
        r.output
    )
    assert not (tmp_path / "r").exists()


def test_a_prefix_that_does_not_exist_is_a_missing_chakra_trace(tmp_path: Path):
    r = invoke("pipeline", "run", "--workload", tmp_path / "nowhere" / "llama", "-o",
               tmp_path / "r")  # fmt: skip
    assert r.exit_code == 2 and "no Chakra trace" in r.output and "llama.0.et" in r.output
    assert "AICB" not in r.output.split("no Chakra trace")[0]


def test_a_group_file_names_the_members(tmp_path: Path):
    node = _coll(1, 0, 64)
    node.attr.append(AttributeProto(name="pg_name", string_val="3"))
    for rank in range(4):
        _write(tmp_path / f"t.{rank}.et", [node] if rank in (1, 2) else [])
    (tmp_path / "comm_group.json").write_text('{"3": [1, 2]}')
    ops = chakra_to_ops(read_chakra(tmp_path / "t"))
    assert ops["rank"].to_list() == [1, 2] and ops["coll_id"].n_unique() == 1
    (tmp_path / "comm_group.json").write_text('{"3": [1, 9]}')
    with pytest.raises(ChakraFormatError, match=r"comm_group.json: group '3' lists a rank"):
        read_chakra(tmp_path / "t")


def test_export_refuses_a_dependency_across_ranks():
    ops = _moe_ops()
    victim = ops.filter(pl.col("rank") == 1)["op_id"][0]
    other = ops.filter(pl.col("rank") == 0)["op_id"][0]
    bad = ops.with_columns(
        pl.when(pl.col("op_id") == victim).then(pl.lit([other])).otherwise("deps").alias("deps")
    )
    with pytest.raises(ChakraFormatError, match=r"depends on op 0 of rank 0; Chakra dep"):
        ops_to_chakra(bad)
