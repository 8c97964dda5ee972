"""Stage templates: the ops of one representative rank, expanded to every rank of the stage.

The schedule of every rank of a pipeline stage is the same up to rank ids, so a builder writes one
:class:`StageTemplate` per stage (a Python list of a few thousand :class:`TemplateOp`) and
:func:`expand_stage` turns it into ops-table rows for all ``t·c·d`` ranks with numpy.

``coll_id`` of a collective = ``key_id · world + group instance`` (the instance index of the rank's
communicator, :meth:`RankLayout.group_instance`); of a point-to-point pair = ``key_id · world +
sender rank``. ``key_id`` numbers the templates' logical keys, which members share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .ops import OPS_SCHEMA
from .parallel import RankLayout

__all__ = ["TemplateOp", "StageTemplate", "expand_stage", "peer_ranks"]

#: ``a2a_matrix(matrix_key_id, n_instances, size_bytes) -> int64[inst, src, dst]``.
A2aMatrix = Callable[[int, int, int], np.ndarray]


@dataclass
class TemplateOp:
    """One op of a stage template; ``deps`` index the template's own ops."""

    name: str
    kind: str
    phase: str
    chunk: int
    layer: int
    mb: int
    duration_ps: int = 0
    flops: float = 0.0
    collective: str = ""
    group: str = ""
    key: tuple = ()
    peer: str = ""  # p2p peer rule: pp_next, pp_prev, cp_next, cp_prev
    anchor_self: bool = True  # p2p coll_id anchored at the sender (send rows) or peer (recv)
    size_bytes: int = 0
    a2a: tuple | None = None  # (matrix key, transpose) for uneven all-to-all
    deps: list[int] = field(default_factory=list)


class StageTemplate:
    """Ops of one representative rank of a stage, with the main-chain bookkeeping."""

    def __init__(self) -> None:
        self.ops: list[TemplateOp] = []
        self.pending: list[int] = []  # ops the next main-chain op waits for

    def add(self, op: TemplateOp, deps: list[int] | None = None, chain: bool = True) -> int:
        """Append ``op`` (after ``deps``, default: the main chain); returns its index.

        With ``chain`` the op becomes the main chain's new tail.
        """
        op.deps = list(self.pending) if deps is None else deps
        self.ops.append(op)
        idx = len(self.ops) - 1
        if chain:
            self.pending = [idx]
        return idx


def peer_ranks(lay: RankLayout, rule: str, ranks: np.ndarray) -> np.ndarray:
    """The peer of each rank under a p2p rule (pp_next, pp_prev, pp_wrap_*, cp_next, cp_prev)."""
    c = lay.coords(ranks)
    if rule == "pp_next":
        return ranks + lay.stage_size
    if rule == "pp_prev":
        return ranks - lay.stage_size
    if rule == "pp_wrap_next":
        return ranks - (lay.pp - 1) * lay.stage_size
    if rule == "pp_wrap_prev":
        return ranks + (lay.pp - 1) * lay.stage_size
    if rule in ("cp_next", "cp_prev"):
        step = 1 if rule == "cp_next" else -1
        ncp = (c["cp"] + step) % lay.cp
        return ranks + lay.tp * (ncp - c["cp"])
    raise AssertionError(rule)


def expand_stage(
    lay: RankLayout,
    stage: int,
    tmpl: StageTemplate,
    key_ids: dict[tuple, int],
    op_base: int,
    a2a_matrix: A2aMatrix | None = None,
) -> pl.DataFrame:
    """Rows of every rank of ``stage`` from its template (op ids from ``op_base``).

    ``key_ids`` maps logical keys to ids and is shared across stages so that cross-stage pairs
    (pipeline send/recv) get the same ``coll_id``. ``a2a_matrix`` supplies per-instance byte
    matrices for all-to-alls with uneven splits (ops whose ``a2a`` is set).
    """
    n_t = len(tmpl.ops)
    ranks_stage = np.arange(stage * lay.stage_size, (stage + 1) * lay.stage_size, dtype=np.int64)
    n_r = ranks_stage.size
    ops = tmpl.ops
    rank = np.repeat(ranks_stage, n_t)
    tidx = np.tile(np.arange(n_t), n_r)
    local = np.repeat(np.arange(n_r, dtype=np.int64), n_t)
    op_id = op_base + local * n_t + tidx

    coll_id = np.full(n_t * n_r, -1, dtype=np.int64)
    peer = np.full(n_t * n_r, -1, dtype=np.int64)
    split: list | None = None
    world = lay.world
    inst_cache: dict[str, np.ndarray] = {}
    a2a_cache: dict[tuple, np.ndarray] = {}
    for k, o in enumerate(ops):
        if o.kind != "comm":
            continue
        sel = slice(k, None, n_t)
        kid = key_ids.setdefault(o.key, len(key_ids))
        if o.peer:
            pr = peer_ranks(lay, o.peer, ranks_stage)
            peer[sel] = pr
            coll_id[sel] = kid * world + (ranks_stage if o.anchor_self else pr)
        else:
            if o.group not in inst_cache:
                inst_cache[o.group] = lay.group_instance(o.group, ranks_stage)
            coll_id[sel] = kid * world + inst_cache[o.group]
        if o.a2a is not None:
            mkey, transpose = o.a2a
            mid = key_ids.setdefault(mkey, len(key_ids))
            inst = lay.group_instance("ep", ranks_stage)
            uniq, inst_local = np.unique(inst, return_inverse=True)
            if mkey not in a2a_cache:
                if a2a_matrix is None:
                    raise ValueError("uneven all-to-all needs an a2a_matrix callback")
                a2a_cache[mkey] = a2a_matrix(mid, uniq.size, o.size_bytes)
            mat = a2a_cache[mkey]
            pos = lay.coords(ranks_stage)["ep"]
            rows = mat[inst_local, :, pos] if transpose else mat[inst_local, pos, :]
            if split is None:
                split = [None] * (n_t * n_r)
            for j in range(n_r):
                split[j * n_t + k] = rows[j].tolist()
    tf = pl.DataFrame(
        {
            "kind": [o.kind for o in ops],
            "name": [o.name for o in ops],
            "phase": [o.phase for o in ops],
            "chunk": np.array([o.chunk for o in ops], dtype=np.int32),
            "layer": np.array([o.layer for o in ops], dtype=np.int32),
            "microbatch": np.array([o.mb for o in ops], dtype=np.int32),
            "duration_ps": np.array([o.duration_ps for o in ops], dtype=np.int64),
            "flops": np.array([o.flops for o in ops], dtype=np.float64),
            "collective": [o.collective for o in ops],
            "group": [o.group for o in ops],
            "size_bytes": np.array([o.size_bytes for o in ops], dtype=np.int64),
            "deps": pl.Series([o.deps for o in ops], dtype=pl.List(pl.Int64)),
        }
    )
    # every rank of the stage runs the template: gather its rows, then offset the dep ids
    df = tf.select(pl.all().gather(tidx)).with_columns(
        pl.Series("op_id", op_id),
        pl.Series("rank", rank.astype(np.int32)),
        pl.Series("seq", tidx.astype(np.int32)),
        pl.lit(stage, dtype=pl.Int32).alias("stage"),
        pl.Series("coll_id", coll_id),
        pl.Series("peer", peer.astype(np.int32)),
        (pl.col("deps") + pl.Series(op_base + local * n_t)).alias("deps"),
    )
    if split is not None:
        sums = np.array([sum(x) if x is not None else -1 for x in split], dtype=np.int64)
        df = df.with_columns(
            pl.Series("size_bytes", np.where(sums >= 0, sums, df["size_bytes"].to_numpy())),
            pl.Series("split_bytes", split, dtype=pl.List(pl.Int64)),
        )
    else:
        df = df.with_columns(pl.lit(None, dtype=pl.List(pl.Int64)).alias("split_bytes"))
    return df.select(list(OPS_SCHEMA))
