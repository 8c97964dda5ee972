"""Chakra execution traces (ASTRA-sim 2, MLCommons) to and from the ops table.

A trace is one file per rank, ``PREFIX.<rank>.et`` for ranks ``0..N-1``, each a stream of
varint-length-delimited protobuf messages: a ``GlobalMetadata``, then ``Node`` messages
(:mod:`wormsim.workload.chakra_schema`). A ``comm_group.json`` beside the files (ASTRA-sim's
``--comm-group-configuration``: ``{"<id>": [ranks]}``) names the ranks of each process group a
collective's ``pg_name`` attribute refers to.

How a trace becomes ops, following ASTRA-sim's ``Workload`` and Chakra's ``ETFeederNode``:

- ``COMP_NODE``: a compute op of ``duration_micros`` µs.
- ``COMM_COLL_NODE``: a collective of ``comm_type`` (all-reduce, all-gather, reduce-scatter,
  all-to-all) over the ranks of ``pg_name`` (every rank without one, as ASTRA-sim does without
  a communicator group). ``comm_size`` is ASTRA-sim's: the buffer for all-reduce, reduce-scatter
  and all-to-all, a rank's shard for all-gather (ASTRA-sim's ring gathers ``comm_size`` × n), so
  an all-gather's ops size is ``comm_size × n``. The ``k``-th collective of a process group on
  each member rank (in dependency order) is one instance; members must agree on its kind and
  size (an all-to-all's size, the bytes a rank sends, may differ between members).
- ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``: a point-to-point transfer from ``comm_src`` to
  ``comm_dst`` of ``comm_size`` bytes; the ``k``-th send and the ``k``-th receive of one
  ``(src, dst, comm_tag)`` pair are one transfer.
- ``data_deps`` and ``ctrl_deps`` (node ids of the same rank) become the ops' ``deps``.
  ``METADATA_NODE`` takes no time: its dependents inherit its dependencies.
- Refused, with the file and node id: memory nodes (remote memory is not modelled), the
  collectives wormsim does not implement (reduce, gather, scatter, broadcast, barrier,
  reduce-scatter-block), dependencies on unknown nodes, cycles, and unmatched instances.

Export (:mod:`wormsim.workload.chakra_export`) writes the same attributes (so ASTRA-sim runs
the file) and a few ``wormsim.*`` attributes ASTRA-sim ignores (group kind, phase, layer,
micro-batch, stage, chunk, FLOPs, exact duration in ps and size), so that an export re-imports
to the same ops. Compute times go to ``duration_micros`` rounded to whole µs, as Chakra has it;
an uneven all-to-all split cannot be said in Chakra (ASTRA-sim splits evenly) and is kept only
in ``wormsim.split_bytes``.
"""

from __future__ import annotations

import heapq
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from google.protobuf.message import DecodeError

from .chakra_schema import COLLECTIVE_TYPES, NODE_TYPES, GlobalMetadata, Node
from .errors import WorkloadError
from .ops import OPS_SCHEMA

__all__ = [
    "ChakraFormatError",
    "ChakraTrace",
    "read_chakra",
    "chakra_to_ops",
    "chakra_experiment_document",
    "COMM_GROUP_FILE",
    "EXTRA_ATTRS",
    "NUM_COLL",
]

#: The communicator-group file ASTRA-sim reads beside the traces.
COMM_GROUP_FILE = "comm_group.json"
#: Largest trace file read (1 GiB) and most ranks.
MAX_FILE_BYTES, MAX_RANKS = 1 << 30, 1 << 16
_COLL = {"ALL_REDUCE": "allreduce", "ALL_GATHER": "allgather",
         "REDUCE_SCATTER": "reducescatter", "ALL_TO_ALL": "alltoall"}  # fmt: skip
_COLL_NUM = {COLLECTIVE_TYPES[k]: v for k, v in _COLL.items()}
#: ops collective -> Chakra ``CollectiveCommType``.
NUM_COLL = {v: COLLECTIVE_TYPES[k] for k, v in _COLL.items()}
_TYPE_NAME = {v: k for k, v in NODE_TYPES.items()}
_COLL_NAME = {v: k for k, v in COLLECTIVE_TYPES.items()}
#: ops columns kept in ``wormsim.<column>`` attributes: column -> attribute value field.
EXTRA_ATTRS = {"group": "string_val", "phase": "string_val", "layer": "int64_val",
          "microbatch": "int64_val", "stage": "int64_val", "chunk": "int64_val",
          "flops": "double_val", "duration_ps": "int64_val", "size_bytes": "int64_val"}  # fmt: skip


class ChakraFormatError(WorkloadError):
    """A Chakra trace is malformed or uses what wormsim does not model (file and node id)."""


@dataclass(frozen=True)
class ChakraTrace:
    """A decoded trace: per rank its file, metadata version and nodes; the process groups."""

    files: list[Path]
    versions: list[str]
    nodes: list[list[Any]]
    groups: dict[str, list[int]]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated length prefix")
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7


def _messages(path: Path) -> list[bytes]:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ChakraFormatError(f"cannot read the trace {path}: {exc.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise ChakraFormatError(f"{path}: {size} bytes, over the 1 GiB limit of a trace file")
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        start = pos
        try:
            n, pos = _varint(data, pos)
        except ValueError as exc:
            raise ChakraFormatError(f"{path}: message {len(out)} at byte {start}: {exc}") from None
        if pos + n > len(data):
            raise ChakraFormatError(
                f"{path}: message {len(out)} at byte {start} announces {n} bytes but the file "
                f"ends after {len(data) - pos}; the trace is truncated"
            )
        out.append(data[pos : pos + n])
        pos += n
    if not out:
        raise ChakraFormatError(f"{path}: empty; a trace starts with a GlobalMetadata message")
    return out


def _decode(path: Path) -> tuple[str, list[Any]]:
    msgs = _messages(path)
    meta, nodes = GlobalMetadata(), []
    try:
        meta.ParseFromString(msgs[0])
    except DecodeError as exc:
        raise ChakraFormatError(
            f"{path}: the GlobalMetadata message does not decode: {exc}"
        ) from None
    for k, blob in enumerate(msgs[1:], 1):
        node = Node()
        try:
            node.ParseFromString(blob)
        except DecodeError as exc:
            raise ChakraFormatError(f"{path}: message {k} is not a Chakra Node: {exc}") from None
        nodes.append(node)
    return meta.version, nodes


def _trace_files(prefix: Path) -> list[Path]:
    files = []
    while len(files) < MAX_RANKS:
        p = prefix.parent / f"{prefix.name}.{len(files)}.et"
        if not p.is_file():
            break
        files.append(p)
    if not files:
        raise ChakraFormatError(
            f"no Chakra trace {prefix}.0.et; give the prefix of the per-rank files PREFIX.<rank>.et"
        )
    _check_no_gap(prefix, len(files))
    return files


def _check_no_gap(prefix: Path, found: int) -> None:
    """Refuse rank files beyond a missing one (``PREFIX.3.et`` absent, ``PREFIX.4.et`` there):
    the missing rank's collectives would never be matched."""
    pattern = re.compile(rf"{re.escape(prefix.name)}\.(\d+)\.et")
    try:
        names = [e.name for e in prefix.parent.iterdir()] if prefix.parent.is_dir() else []
    except OSError:
        return
    ranks = sorted(int(m.group(1)) for n in names if (m := pattern.fullmatch(n)))
    later = [r for r in ranks if r > found]
    if later:
        raise ChakraFormatError(
            f"{prefix}.{found}.et is missing but {prefix}.{later[0]}.et exists: the trace has a "
            f"gap in its ranks (found {len(ranks)} rank files up to rank {ranks[-1]}); restore "
            "the missing file or regenerate the trace"
        )


def _read_groups(path: Path, n: int) -> dict[str, list[int]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ChakraFormatError(f"{path}: not a JSON communicator-group file: {exc}") from None
    if not isinstance(data, dict):
        raise ChakraFormatError(f'{path}: expected {{"<group id>": [ranks], ...}}')
    out = {}
    for key, ranks in data.items():
        if not (isinstance(ranks, list) and ranks and all(type(r) is int for r in ranks)):
            raise ChakraFormatError(f"{path}: group {key!r}: expected a list of ranks")
        if len(set(ranks)) != len(ranks) or not all(0 <= r < n for r in ranks):
            raise ChakraFormatError(
                f"{path}: group {key!r} lists a rank twice or outside 0..{n - 1} (the trace has "
                f"{n} rank files)"
            )
        out[str(key)] = sorted(ranks)
    return out


def read_chakra(prefix: str | Path) -> ChakraTrace:
    """Read the per-rank ``PREFIX.<rank>.et`` files and ``comm_group.json`` if present.

    Raises
    ------
    ChakraFormatError
        A missing, truncated or undecodable file (named, with the message index).
    """
    prefix = Path(prefix)
    if prefix.name.endswith(".et"):  # PREFIX.0.et given: take its prefix
        prefix = prefix.with_name(re.sub(r"\.\d+\.et$", "", prefix.name))
    files = _trace_files(prefix)
    decoded = [_decode(p) for p in files]
    groups_file = prefix.parent / COMM_GROUP_FILE
    groups = _read_groups(groups_file, len(files)) if groups_file.is_file() else {}
    return ChakraTrace(files, [v for v, _ in decoded], [n for _, n in decoded], groups)


def _attrs(node: Any) -> dict[str, Any]:
    out = {}
    for a in node.attr:
        which = a.WhichOneof("value")
        if which is None:
            continue
        value = getattr(a, which)
        out[a.name] = list(value.values) if which.endswith("_list") else value
    return out


def _topo_order(where: str, nodes: list[Any]) -> tuple[list[Any], dict[int, list[int]]]:
    """Nodes in dependency order (ties by id) and each node's dependencies."""
    by_id: dict[int, Any] = {}
    for node in nodes:
        if node.id in by_id:
            raise ChakraFormatError(f"{where}: node id {node.id} appears twice")
        by_id[node.id] = node
    deps: dict[int, list[int]] = {}
    children: dict[int, list[int]] = defaultdict(list)
    for node in nodes:
        ds = list(dict.fromkeys([*node.data_deps, *node.ctrl_deps]))
        for d in ds:
            if d not in by_id:
                raise ChakraFormatError(
                    f"{where}: node {node.id} ({node.name!r}) depends on node {d}, which is not "
                    "in this rank's trace"
                )
            children[d].append(node.id)
        deps[node.id] = ds
    missing = {i: len(ds) for i, ds in deps.items()}
    ready = [i for i, m in missing.items() if m == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(by_id[i])
        for c in children[i]:
            missing[c] -= 1
            if missing[c] == 0:
                heapq.heappush(ready, c)
    if len(order) != len(nodes):
        stuck = min(i for i, m in missing.items() if m > 0)
        raise ChakraFormatError(f"{where}: node {stuck} is on a dependency cycle")
    return order, deps


def _comm_fields(where: str, rank: int, node: Any, attrs: dict, trace: ChakraTrace, n: int):
    """``(collective, members, size, peer, tag)`` of a communication node."""
    kind = _TYPE_NAME.get(node.type, str(node.type))
    if "comm_size" not in attrs:
        raise ChakraFormatError(f"{where}: node {node.id} ({kind}) has no comm_size attribute")
    size = int(attrs["comm_size"])
    if size < 0:
        raise ChakraFormatError(f"{where}: node {node.id}: comm_size {size} is negative")
    if node.type == NODE_TYPES["COMM_COLL_NODE"]:
        ctype = int(attrs.get("comm_type", -1))
        if ctype not in _COLL_NUM:
            name = _COLL_NAME.get(ctype, "missing" if ctype < 0 else str(ctype))
            raise ChakraFormatError(
                f"{where}: node {node.id} ({node.name!r}): collective {name} is not modelled; "
                f"wormsim runs {', '.join(_COLL)}"
            )
        pg = attrs.get("pg_name")
        if pg is None or not trace.groups:
            members = list(range(n))
        elif str(pg) in trace.groups:
            members = trace.groups[str(pg)]
        else:
            raise ChakraFormatError(
                f"{where}: node {node.id}: pg_name {pg!r} is not a group of {COMM_GROUP_FILE}"
            )
        if rank not in members:
            raise ChakraFormatError(
                f"{where}: node {node.id}: rank {rank} is not a member of its group {members}"
            )
        coll = _COLL_NUM[ctype]
        if coll == "allgather":
            size *= len(members)
        return coll, tuple(members), size, -1, None
    send = node.type == NODE_TYPES["COMM_SEND_NODE"]
    key = "comm_dst" if send else "comm_src"
    if key not in attrs:
        raise ChakraFormatError(f"{where}: node {node.id} ({kind}) has no {key} attribute")
    peer = int(attrs[key])
    if not 0 <= peer < n or peer == rank:
        raise ChakraFormatError(
            f"{where}: node {node.id}: {key} {peer} must be another rank of 0..{n - 1}"
        )
    tag = int(attrs.get("comm_tag", 0))
    return ("send" if send else "recv"), (rank, peer) if send else (peer, rank), size, peer, tag


def _extra(attrs: dict, column: str, default: Any) -> Any:
    return attrs.get(f"wormsim.{column}", default)


def chakra_to_ops(trace: ChakraTrace) -> pl.DataFrame:
    """The ops table of a trace (see the module docstring).

    Raises
    ------
    ChakraFormatError
        Naming the file and node id.
    """
    n = len(trace.files)
    rows: list[dict[str, Any]] = []
    op_of: dict[tuple[int, int], int] = {}
    coll_key: dict[tuple, int] = {}
    coll_seen: dict[tuple, tuple[str, int, int]] = {}
    counts: dict[tuple, int] = defaultdict(int)
    for rank, (path, nodes) in enumerate(zip(trace.files, trace.nodes, strict=True)):
        where = str(path)
        order, deps = _topo_order(where, nodes)
        through: dict[int, list[int]] = {}  # metadata node -> the ops it stands for
        for node in order:
            op_deps = list(dict.fromkeys(
                x for d in deps[node.id] for x in through.get(d, [op_of.get((rank, d), -1)])
                if x >= 0
            ))  # fmt: skip
            if node.type == NODE_TYPES["METADATA_NODE"]:
                through[node.id] = op_deps
                continue
            attrs = _attrs(node)
            row = {
                "op_id": len(rows), "rank": rank, "name": node.name[:200] or f"chakra_{node.id}",
                "phase": _extra(attrs, "phase", "fwd"), "stage": _extra(attrs, "stage", 0),
                "chunk": _extra(attrs, "chunk", 0), "layer": _extra(attrs, "layer", -1),
                "microbatch": _extra(attrs, "microbatch", -1), "flops": _extra(attrs, "flops", 0.0),
                "peer": -1, "coll_id": -1, "split_bytes": attrs.get("wormsim.split_bytes"),
                "deps": op_deps, "duration_ps": 0, "size_bytes": 0, "collective": "", "group": "",
            }  # fmt: skip
            if node.type == NODE_TYPES["COMP_NODE"]:
                row["kind"] = "compute"
                row["duration_ps"] = int(_extra(attrs, "duration_ps", node.duration_micros * 10**6))
            elif node.type in (NODE_TYPES[k] for k in ("COMM_COLL_NODE", "COMM_SEND_NODE",
                                                       "COMM_RECV_NODE")):  # fmt: skip
                coll, members, size, peer, tag = _comm_fields(where, rank, node, attrs, trace, n)
                size = int(_extra(attrs, "size_bytes", size))
                p2p = coll in ("send", "recv")
                group = _extra(attrs, "group", "pp" if p2p else "dp")
                # the k-th collective of a group on a rank; the k-th send (recv) of a pair and tag
                base = (members, tag) if p2p else (members,)
                mine = (*base, coll, rank) if p2p else (*base, rank)
                k, counts[mine] = counts[mine], counts[mine] + 1
                key = (*base, k)
                label = "p2p" if p2p else coll
                if key in coll_seen:
                    seen = coll_seen[key]
                    if label != seen[0] or (size != seen[1] and coll != "alltoall"):
                        raise ChakraFormatError(
                            f"{where}: node {node.id}: {coll} of {size} bytes, but rank "
                            f"{seen[2]} issues {seen[0]} of {seen[1]} bytes as the same "
                            f"instance (number {k} of its group)"
                        )
                else:
                    coll_seen[key] = (label, size, rank)
                    coll_key[key] = len(coll_key)
                row.update(kind="comm", collective=coll, group=str(group), size_bytes=size,
                           peer=peer, coll_id=coll_key[key], _members=members)  # fmt: skip
            else:
                raise ChakraFormatError(
                    f"{where}: node {node.id} ({node.name!r}) is a "
                    f"{_TYPE_NAME.get(node.type, node.type)}: memory and invalid nodes are not "
                    "modelled"
                )
            op_of[(rank, node.id)] = row["op_id"]
            rows.append(row)
    _check_instances(rows, trace.files)
    for r in rows:
        r.pop("_members", None)
    frame = pl.DataFrame(rows, schema={k: OPS_SCHEMA[k] for k in rows[0]} if rows else OPS_SCHEMA)
    frame = frame.with_columns(pl.int_range(pl.len()).over("rank").cast(pl.Int32).alias("seq"))
    return frame.select(list(OPS_SCHEMA))


def _check_instances(rows: list[dict[str, Any]], files: list[Path]) -> None:
    """Every collective instance has all its members; every send its receive."""
    by_coll: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["coll_id"] >= 0:
            by_coll[r["coll_id"]].append(r)
    for members in by_coll.values():
        first = members[0]
        where = f"{files[first['rank']]}: {first['collective']} {first['name']!r}"
        if first["collective"] in ("send", "recv"):
            if sorted(m["collective"] for m in members) != ["recv", "send"]:
                other = "recv" if first["collective"] == "send" else "send"
                raise ChakraFormatError(
                    f"{where} (peer {first['peer']}) has no matching {other} on rank "
                    f"{first['peer']} (the same comm_tag, in order)"
                )
            continue
        missing = sorted(set(first["_members"]) - {m["rank"] for m in members})
        if missing:
            raise ChakraFormatError(
                f"{where} has no counterpart on rank(s) {missing[:8]} of its group (every "
                "member issues the group's collectives in the same order)"
            )


def chakra_experiment_document(
    ranks: int, data: dict[str, Any], source: str = ""
) -> dict[str, Any]:
    """The experiment document an imported trace runs in, as a plain mapping.

    ``data``'s cluster, collective, network and sim sections are kept; the trace defines the
    ops, so ``model`` and ``parallel`` are replaced by a placeholder that validates for
    ``ranks`` GPUs (one data-parallel group of all ranks), and ``cluster.gpus`` defaults to
    ``ranks``.

    Raises
    ------
    ConfigError
        ``cluster.gpus`` differs from the trace's number of ranks.
    """
    from wormsim.errors import ConfigError

    data = dict(data)
    cluster = data.get("cluster")
    data["cluster"] = dict(cluster) if isinstance(cluster, dict) else {}
    gpus = data["cluster"].setdefault("gpus", ranks)
    if gpus != ranks:
        raise ConfigError(
            f"{source or 'the Chakra trace'} has {ranks} rank files but the experiment's "
            f"cluster.gpus is {gpus}; make them equal (or leave cluster.gpus out)"
        )
    data["model"] = dict(name=f"chakra:{Path(source).name}"[:200], num_layers=1, hidden_size=128,
                         num_heads=1, vocab_size=1024, seq_length=1)  # fmt: skip
    data["parallel"] = dict(tp=1, pp=1, dp=ranks, global_batch=ranks, micro_batch=1)
    return data
