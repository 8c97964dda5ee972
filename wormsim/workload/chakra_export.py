"""Chakra export: an ops table as per-rank ``.et`` traces and ``comm_group.json``.

The inverse of :func:`wormsim.workload.chakra.chakra_to_ops`, in the attributes ASTRA-sim reads
(``comm_type``, ``comm_size``, ``pg_name``, ``comm_src``, ``comm_dst``, ``comm_tag``,
``duration_micros``, ``is_cpu_op``) plus the ``wormsim.*`` ones that make an export re-import to
the same ops (see :mod:`wormsim.workload.chakra`). Node ids are the ops' ``seq`` on their rank;
process groups are numbered ``1, 2, ...`` in order of first use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from .chakra import COMM_GROUP_FILE, EXTRA_ATTRS, NUM_COLL, ChakraFormatError
from .chakra_schema import NODE_TYPES, AttributeProto, GlobalMetadata, Node

__all__ = ["ops_to_chakra", "write_chakra"]


def _attr(name: str, field: str, value: Any) -> Any:
    a = AttributeProto(name=name)
    if field.endswith("_list"):
        getattr(a, field).values.extend(value)
    else:
        setattr(a, field, value)
    return a


def _delimited(msg: Any) -> bytes:
    blob = msg.SerializeToString()
    n, head = len(blob), bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        head.append(b | (0x80 if n else 0))
        if not n:
            return bytes(head) + blob


def ops_to_chakra(ops: pl.DataFrame) -> tuple[list[bytes], dict[str, list[int]]]:
    """The per-rank ``.et`` contents and the ``comm_group.json`` mapping of an ops table.

    Raises
    ------
    ChakraFormatError
        A dependency on another rank's op (Chakra dependencies stay inside a rank), or an
        all-gather whose size is not a whole number of shards.
    """
    ops = ops.sort("rank", "seq")
    n = int(ops["rank"].max()) + 1 if ops.height else 0
    members = (
        ops.filter(pl.col("coll_id") >= 0).group_by("coll_id").agg(pl.col("rank").unique().sort())
    )
    member_of = dict(zip(members["coll_id"].to_list(), members["rank"].to_list(), strict=True))
    groups: dict[tuple[int, ...], str] = {}
    node_of = {
        op: (rank, seq) for op, rank, seq in zip(ops["op_id"], ops["rank"], ops["seq"], strict=True)
    }
    out = [[_delimited(GlobalMetadata(version="0.0.4"))] for _ in range(n)]
    for op in ops.iter_rows(named=True):
        rank = op["rank"]
        node = Node(id=op["seq"], name=op["name"])
        for d in op["deps"]:
            if node_of[d][0] != rank:
                raise ChakraFormatError(
                    f"op {op['op_id']} ({op['name']!r}, rank {rank}) depends on op {d} of rank "
                    f"{node_of[d][0]}; Chakra dependencies stay inside a rank"
                )
            node.data_deps.append(node_of[d][1])
        node.attr.append(_attr("is_cpu_op", "bool_val", False))
        coll = op["collective"]
        if op["kind"] == "compute":
            node.type = NODE_TYPES["COMP_NODE"]
            node.duration_micros = round(op["duration_ps"] / 10**6)
        elif coll in ("send", "recv"):
            send = coll == "send"
            node.type = NODE_TYPES["COMM_SEND_NODE" if send else "COMM_RECV_NODE"]
            src, dst = (rank, op["peer"]) if send else (op["peer"], rank)
            node.attr.extend([
                _attr("comm_src", "int32_val", src), _attr("comm_dst", "int32_val", dst),
                _attr("comm_size", "int64_val", op["size_bytes"]),
                _attr("comm_tag", "int32_val", op["coll_id"] % (1 << 31)),
            ])  # fmt: skip
        else:
            ranks = tuple(member_of[op["coll_id"]])
            pg = groups.setdefault(ranks, str(len(groups) + 1))
            size = op["size_bytes"]
            if coll == "allgather":
                size //= len(ranks)
            node.type = NODE_TYPES["COMM_COLL_NODE"]
            node.attr.extend([
                _attr("comm_type", "int64_val", NUM_COLL[coll]),
                _attr("comm_size", "int64_val", size), _attr("pg_name", "string_val", pg),
            ])  # fmt: skip
        for col, field in EXTRA_ATTRS.items():
            if op[col] is not None and (col != "group" or op["kind"] == "comm"):
                node.attr.append(_attr(f"wormsim.{col}", field, op[col]))
        if op["split_bytes"] is not None:
            node.attr.append(_attr("wormsim.split_bytes", "int64_list", op["split_bytes"]))
        out[rank].append(_delimited(node))
    comm_groups = {pg: list(ranks) for ranks, pg in groups.items()}
    return [b"".join(parts) for parts in out], comm_groups


def write_chakra(ops: pl.DataFrame, prefix: str | Path) -> list[Path]:
    """Write ``PREFIX.<rank>.et`` for every rank and ``comm_group.json`` beside them.

    Returns
    -------
    list of Path
        The files written (the traces, then the group file).
    """
    from wormsim.rundir import atomic_write

    prefix = Path(prefix)
    blobs, groups = ops_to_chakra(ops)
    paths = []
    for rank, blob in enumerate(blobs):
        path = prefix.parent / f"{prefix.name}.{rank}.et"
        atomic_write(path, lambda tmp, blob=blob: tmp.write_bytes(blob))
        paths.append(path)
    group_file = prefix.parent / COMM_GROUP_FILE
    text = json.dumps(groups, indent=1) + "\n"
    atomic_write(group_file, lambda tmp: tmp.write_text(text))
    return [*paths, group_file]
