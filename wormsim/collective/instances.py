"""Collective instances of an ops table: the comm rows grouped by ``coll_id``, vectorised.

Rows are sorted by ``(coll_id, rank)``, so instance ``i`` owns rows ``start[i] : start[i] + n[i]``
and its members are those rows' ranks, ascending (the ops contract).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from wormsim.collective.errors import CollectiveError
from wormsim.workload.ops import COLLECTIVES

__all__ = ["COLL_CODES", "Instances", "collect_instances"]

#: Collective name -> integer code used internally.
COLL_CODES: dict[str, int] = {c: i for i, c in enumerate(COLLECTIVES)}
_SEND, _RECV = COLL_CODES["send"], COLL_CODES["recv"]


@dataclass
class Instances:
    """Comm rows sorted by ``(coll_id, rank)`` and the instances they form.

    Attributes
    ----------
    op_id, rank, peer, size, coll : arrays over comm rows (``coll`` is the :data:`COLL_CODES`
        code of the row's collective)
    split : polars.Series
        ``split_bytes`` of the comm rows, same order.
    start, n : int64[I]
        First row and member count of each instance.
    kind : int64[I]
        Collective code of the instance (``send`` for a send/recv pair).
    size : int64[I]
        Size of the instance (first row's; the sender's for send/recv).
    n_servers, per_server : int64[I]
        Servers spanned and members per server (0 when servers hold different counts).
    uneven : bool[I]
        All-to-all with ``split_bytes``.
    """

    op_id: np.ndarray
    rank: np.ndarray
    peer: np.ndarray
    size_row: np.ndarray
    coll: np.ndarray
    split: pl.Series
    start: np.ndarray
    n: np.ndarray
    kind: np.ndarray
    size: np.ndarray
    n_servers: np.ndarray
    per_server: np.ndarray
    uneven: np.ndarray

    @property
    def count(self) -> int:
        """Number of instances."""
        return int(self.start.shape[0])


def _first_bad(mask: np.ndarray, ids: np.ndarray) -> int:
    return int(ids[np.flatnonzero(mask)[0]])


def collect_instances(ops: pl.DataFrame, gpus_per_node: int) -> Instances:
    """Group the comm rows of ``ops`` into collective instances and check them.

    Raises
    ------
    CollectiveError
        Unknown collective, negative ``coll_id``, a rank twice in one instance, members that
        disagree on the collective or its size, or a broken send/recv pair.
    """
    comm = (
        ops.lazy()
        .filter(pl.col("kind") == "comm")
        .select("op_id", "rank", "coll_id", "collective", "size_bytes", "peer", "split_bytes")
        .sort("coll_id", "rank")
        .collect()
    )
    bad = comm.filter(~pl.col("collective").is_in(list(COLLECTIVES)))
    if bad.height:
        raise CollectiveError(
            f"op {bad['op_id'][0]}: collective {bad['collective'][0]!r} is not one of "
            f"{COLLECTIVES}; fix the comm row's `collective`"
        )
    op_id = comm["op_id"].to_numpy().astype(np.int64)
    rank = comm["rank"].to_numpy().astype(np.int64)
    cid = comm["coll_id"].to_numpy().astype(np.int64)
    size_row = comm["size_bytes"].to_numpy().astype(np.int64)
    peer = comm["peer"].fill_null(-1).to_numpy().astype(np.int64)
    coll = comm["collective"].replace_strict(COLL_CODES, return_dtype=pl.Int64).to_numpy()
    if cid.size and cid[0] < 0:
        raise CollectiveError(f"op {op_id[0]}: comm rows need coll_id >= 0, got {cid[0]}")
    if np.any(size_row < 0):
        raise CollectiveError(f"op {_first_bad(size_row < 0, op_id)}: size_bytes must be >= 0")
    new = np.ones(cid.shape[0], dtype=bool)
    new[1:] = cid[1:] != cid[:-1]
    start = np.flatnonzero(new).astype(np.int64)
    n = np.diff(np.append(start, cid.shape[0])).astype(np.int64)
    inst_of_row = np.cumsum(new) - 1
    dup = ~new & np.concatenate([[False], rank[1:] == rank[:-1]])
    if dup.any():
        raise CollectiveError(
            f"op {_first_bad(dup, op_id)}: rank appears twice in coll_id "
            f"{cid[np.flatnonzero(dup)[0]]}; each member has exactly one row per collective"
        )
    kind = coll[start]
    first_kind = kind[inst_of_row]
    is_p2p_row = (coll == _SEND) | (coll == _RECV)
    p2p = (kind == _SEND) | (kind == _RECV)
    mismatch = (coll != first_kind) & ~(is_p2p_row & p2p[inst_of_row])
    if mismatch.any():
        raise CollectiveError(
            f"op {_first_bad(mismatch, op_id)}: members of coll_id "
            f"{cid[np.flatnonzero(mismatch)[0]]} name different collectives"
        )
    sized = np.isin(kind, [COLL_CODES[k] for k in ("allreduce", "allgather", "reducescatter")])
    size_bad = (size_row != size_row[start][inst_of_row]) & sized[inst_of_row]
    if size_bad.any():
        raise CollectiveError(
            f"op {_first_bad(size_bad, op_id)}: members of coll_id "
            f"{cid[np.flatnonzero(size_bad)[0]]} disagree on size_bytes"
        )
    size = size_row[start].copy()
    if p2p.any():
        ps = start[p2p]
        if np.any(n[p2p] != 2):
            raise CollectiveError(
                f"coll_id {cid[ps[n[p2p] != 2][0]]}: a send/recv needs exactly two rows "
                "(send on the sender, recv on the receiver)"
            )
        a, b = ps, ps + 1
        pair_ok = ((coll[a] == _SEND) & (coll[b] == _RECV)) | (
            (coll[a] == _RECV) & (coll[b] == _SEND)
        )
        pair_ok &= (peer[a] == rank[b]) & (peer[b] == rank[a])
        if not pair_ok.all():
            raise CollectiveError(
                f"coll_id {cid[a[~pair_ok][0]]}: needs one send and one recv row naming each "
                "other in `peer`"
            )
        snd = np.where(coll[a] == _SEND, a, b)
        rcv = np.where(coll[a] == _SEND, b, a)
        if np.any(size_row[snd] != size_row[rcv]):
            raise CollectiveError(
                f"coll_id {cid[snd[size_row[snd] != size_row[rcv]][0]]}: send and recv rows "
                "disagree on size_bytes"
            )
        size[p2p] = size_row[snd]
        kind[p2p] = _SEND
    server = rank // gpus_per_node
    run_new = new | np.concatenate([[True], server[1:] != server[:-1]])
    run_start = np.flatnonzero(run_new)
    run_len = np.diff(np.append(run_start, cid.shape[0]))
    run_inst = inst_of_row[run_start]
    n_servers = np.bincount(run_inst, minlength=start.shape[0]).astype(np.int64)
    first_run = np.flatnonzero(new[run_start])
    rmax = np.maximum.reduceat(run_len, first_run) if run_len.size else run_len
    rmin = np.minimum.reduceat(run_len, first_run) if run_len.size else run_len
    per_server = np.where(rmax == rmin, rmax, 0).astype(np.int64)
    split = comm["split_bytes"]
    uneven = np.zeros(start.shape[0], dtype=bool)
    if split.null_count() < split.len():
        has = (~split.is_null()).to_numpy()
        uneven = np.bincount(inst_of_row[has], minlength=start.shape[0]) > 0
        uneven &= kind == COLL_CODES["alltoall"]
    return Instances(
        op_id=op_id,
        rank=rank,
        peer=peer,
        size_row=size_row,
        coll=coll,
        split=split,
        start=start,
        n=n,
        kind=kind,
        size=size,
        n_servers=n_servers,
        per_server=per_server,
        uneven=uneven,
    )
