"""``expand_dag``: the ops table and the cluster layout -> the flow DAG (``dag.parquet``).

Every op row becomes the node whose id is its ``op_id``: a compute op a ``compute`` node with the
op's deps; a comm op on rank ``r`` a ``delay`` node ("the collective is done on ``r``") whose deps
are the flows completing the collective at ``r`` and whose duration is the latency term
(``nvlink_step_latency_ns`` x steps for single-server collectives, 0 across servers). Flow (and
gate) nodes follow, with ids after all op ids. Instances are expanded bucket by bucket
(:mod:`wormsim.collective.plan`), each bucket with one vectorised template stamp.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from wormsim.collective.algorithms import by_name
from wormsim.collective.alltoall import alltoall_sizes, even_split
from wormsim.collective.config import CollectiveSpec
from wormsim.collective.dag import DAG_SCHEMA
from wormsim.collective.errors import CollectiveError
from wormsim.collective.instances import COLL_CODES, Instances, collect_instances
from wormsim.collective.layout import ClusterLayout
from wormsim.collective.plan import algorithm_names, build_template, plan_buckets
from wormsim.collective.template import Instantiated, Template, instantiate
from wormsim.units import PS_PER_NS
from wormsim.workload.ops import OPS_SCHEMA

__all__ = ["expand_dag"]

_I64 = np.int64
_KINDS = ("flow", "compute", "delay")
_SEND = COLL_CODES["send"]


def _as_layout(layout: ClusterLayout | tuple[int, int]) -> ClusterLayout:
    if isinstance(layout, ClusterLayout):
        return layout
    try:
        gpn, num = layout
    except (TypeError, ValueError) as exc:
        raise CollectiveError(
            "layout must be a ClusterLayout or a (gpus_per_node, num_gpus) pair"
        ) from exc
    return ClusterLayout(gpus_per_node=int(gpn), num_gpus=int(num))


def _check_ops(ops: pl.DataFrame, layout: ClusterLayout) -> pl.DataFrame:
    missing = [c for c in OPS_SCHEMA if c not in ops.columns]
    if missing:
        raise CollectiveError(f"ops table lacks columns {missing}; see wormsim.workload.ops")
    ops = ops.select([pl.col(c).cast(t) for c, t in OPS_SCHEMA.items()])
    if ops.height and not ops["op_id"].is_sorted():
        ops = ops.sort("op_id")
    if ops.height:
        ids = ops["op_id"].to_numpy()
        if ids[0] != 0 or ids[-1] != ops.height - 1 or np.any(np.diff(ids) != 1):
            raise CollectiveError("op_id must be dense 0..n-1 (each id once); renumber the ops")
        r = ops["rank"].to_numpy()
        if r.min() < 0 or r.max() >= layout.num_gpus:
            raise CollectiveError(
                f"rank {int(r.max()) if r.max() >= layout.num_gpus else int(r.min())} is outside "
                f"0..{layout.num_gpus - 1}; fix cluster.gpus or the ops ranks"
            )
        bad = ops.filter(~pl.col("kind").is_in(["compute", "comm"]))
        if bad.height:
            raise CollectiveError(
                f"op {bad['op_id'][0]}: kind {bad['kind'][0]!r} must be 'compute' or 'comm'"
            )
    return ops


def _members(inst: Instances, sel: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    rows = inst.start[sel][:, None] + np.arange(n, dtype=_I64)[None, :]
    return inst.rank[rows], inst.op_id[rows]


def _split_matrix(inst: Instances, sel: np.ndarray, n: int) -> np.ndarray:
    rows = inst.start[sel][:, None] + np.arange(n, dtype=_I64)[None, :]
    split = even_split(inst.size_row[rows], n)
    uneven = inst.uneven[sel]
    if uneven.any():
        urows = rows[uneven].ravel()
        lists = inst.split.gather(urows)
        lens = lists.list.len().fill_null(-1).to_numpy()
        if np.any(lens != n):
            bad = int(inst.op_id[urows[np.flatnonzero(lens != n)[0]]])
            raise CollectiveError(
                f"op {bad}: split_bytes must list one size per member ({n}) on every row of an "
                "uneven all-to-all"
            )
        vals = lists.explode().to_numpy().astype(_I64)
        split[uneven] = vals.reshape(-1, n, n)
    return split


def _gather_deps(
    nodes: np.ndarray, ops_of: np.ndarray, dep_off: np.ndarray, dep_flat: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    cnt = dep_off[ops_of + 1] - dep_off[ops_of]
    total = int(cnt.sum())
    node = np.repeat(nodes, cnt)
    idx = np.repeat(dep_off[ops_of] - (np.cumsum(cnt) - cnt), cnt) + np.arange(total, dtype=_I64)
    return node, dep_flat[idx]


def _deps_column(
    n_total: int, node: np.ndarray, dep: np.ndarray, own: pl.Series, keep_own: np.ndarray
) -> pl.Series:
    # one sort of packed (node, dep) keys orders and de-duplicates the edges
    key = np.sort((node.astype(np.uint64) << np.uint64(32)) | dep.astype(np.uint64))
    if key.size:
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
    agg = (
        pl.DataFrame(
            {
                "node_id": (key >> np.uint64(32)).astype(_I64),
                "deps": (key & np.uint64(0xFFFFFFFF)).astype(_I64),
            }
        )
        .with_columns(pl.col("node_id").set_sorted())
        .group_by("node_id", maintain_order=True)
        .agg("deps")
    )
    built = (
        pl.DataFrame({"node_id": np.arange(n_total, dtype=_I64)})
        .with_columns(pl.col("node_id").set_sorted())
        .join(agg, on="node_id", how="left", maintain_order="left")
        .get_column("deps")
    )
    n_ops = own.len()
    head = pl.select(
        pl.when(pl.Series(keep_own)).then(own).otherwise(built.head(n_ops)).alias("deps")
    ).to_series()
    out = pl.concat([head, built.tail(n_total - n_ops)]) if n_total > n_ops else head
    return out.fill_null(pl.lit([], dtype=pl.List(pl.Int64))).alias("deps")


def expand_dag(
    ops: pl.DataFrame,
    layout: ClusterLayout | tuple[int, int],
    spec: CollectiveSpec | None = None,
) -> pl.DataFrame:
    """Expand an ops table into the flow DAG.

    Parameters
    ----------
    ops : polars.DataFrame
        ``ops.parquet`` (:data:`wormsim.workload.ops.OPS_SCHEMA`).
    layout : ClusterLayout or (gpus_per_node, num_gpus)
        Rank ``r`` lives on server ``r // gpus_per_node``.
    spec : CollectiveSpec, optional
        The ``collective:`` config (defaults if omitted).

    Returns
    -------
    polars.DataFrame
        The DAG in :data:`wormsim.collective.dag.DAG_SCHEMA` column order and dtypes, node ids
        dense, op nodes first (``node_id == op_id``).

    Raises
    ------
    CollectiveError
        If the ops table breaks its contract.

    Examples
    --------
    >>> import polars as pl
    >>> from wormsim.workload.ops import OPS_SCHEMA
    >>> rows = [dict(op_id=r, rank=r, seq=0, kind="comm", name="ar", phase="fwd", stage=0,
    ...              chunk=0, layer=0, microbatch=0, duration_ps=0, flops=0.0,
    ...              collective="allreduce", group="tp", coll_id=0, peer=-1,
    ...              size_bytes=1 << 20, split_bytes=None, deps=[]) for r in range(4)]
    >>> dag = expand_dag(pl.DataFrame(rows, schema=OPS_SCHEMA), (4, 4))
    >>> int(dag.filter(pl.col("kind") == "flow")["size_bytes"].sum()) == 2 * 3 * (1 << 20)
    True
    """
    spec = spec or CollectiveSpec()
    layout = _as_layout(layout)
    ops = _check_ops(ops, layout)
    n_ops = ops.height
    deps_s = ops["deps"]
    dep_len = deps_s.list.len().fill_null(0).to_numpy().astype(_I64)
    dep_off = np.zeros(n_ops + 1, dtype=_I64)
    np.cumsum(dep_len, out=dep_off[1:])
    dep_flat = deps_s.explode().drop_nulls().to_numpy().astype(_I64)
    if dep_flat.shape[0] != dep_off[-1]:
        raise CollectiveError("deps lists must not contain nulls")

    inst = collect_instances(ops, layout.gpus_per_node)
    bucket, keys, algo_of_bucket = plan_buckets(inst, spec)
    op_algo = np.zeros(n_ops, dtype=_I64)
    op_latency = np.zeros(n_ops, dtype=_I64)
    parts: list[tuple[Instantiated, int]] = []
    base = n_ops
    order = np.argsort(bucket, kind="stable")
    bounds = np.searchsorted(bucket[order], np.arange(len(keys) + 1))
    step_ps = int(round(spec.nvlink_step_latency_ns * PS_PER_NS))
    for b, key in enumerate(keys):
        sel = order[bounds[b] : bounds[b + 1]]
        if sel.size == 0:
            continue
        t: Template = build_template(key)
        algo = by_name(key.algorithm)
        ranks, opids = _members(inst, sel, key.n)
        if algo.sender_first:
            first = inst.start[sel]
            swap = inst.coll[first] != _SEND
            ranks[swap] = ranks[swap][:, ::-1]
            opids[swap] = opids[swap][:, ::-1]
        flow_sizes = None
        if algo.split_sizes and t.n_nodes:
            flow_sizes = alltoall_sizes(t, _split_matrix(inst, sel, key.n))
        got = instantiate(t, ranks, opids, inst.size[sel], base, flow_sizes)
        parts.append((got, int(algo_of_bucket[b])))
        base += sel.shape[0] * t.n_nodes
        op_algo[opids.ravel()] = algo_of_bucket[b]
        if key.n_servers <= 1 and key.n > 1 and algo.step_latency:
            op_latency[opids.ravel()] = step_ps * t.n_steps
    n_total = base
    if n_total >= 1 << 32:
        raise CollectiveError(f"the DAG would have {n_total} nodes (> 2**32); lower the scale")
    return _assemble(ops, parts, n_total, op_algo, op_latency, dep_off, dep_flat)


def _assemble(
    ops: pl.DataFrame,
    parts: list[tuple[Instantiated, int]],
    n_total: int,
    op_algo: np.ndarray,
    op_latency: np.ndarray,
    dep_off: np.ndarray,
    dep_flat: np.ndarray,
) -> pl.DataFrame:
    n_ops = ops.height
    cat = np.concatenate

    def col(name: str) -> np.ndarray:
        return cat([getattr(p, name) for p, _ in parts]) if parts else np.zeros(0, _I64)

    is_comp = (ops["kind"] == "compute").to_numpy()
    # dependencies of every non-compute node
    inh_node, inh_dep = _gather_deps(col("inherit_node"), col("inherit_op"), dep_off, dep_flat)
    node = cat([col("edge_node"), col("done_op"), inh_node])
    dep = cat([col("edge_dep"), col("done_dep"), inh_dep])
    deps = _deps_column(n_total, node, dep, ops["deps"], is_comp)

    gen_flow = col("is_flow").astype(bool)
    gen_algo = (
        cat([np.full(p.is_flow.shape[0], a, _I64) for p, a in parts])
        if parts
        else np.zeros(0, _I64)
    )
    minus_ops = np.full(n_ops, -1, _I64)
    kind_code = cat([np.where(is_comp, 1, 2), np.where(gen_flow, 0, 2)])
    label_op = cat([np.arange(n_ops, dtype=_I64), col("label_op")])
    label_cols = ops.select("collective", "phase", "layer", "microbatch", "group")
    labels = pl.concat([label_cols, label_cols[col("label_op")]]) if parts else label_cols
    rank = cat([np.where(is_comp, ops["rank"].to_numpy(), -1), np.full(gen_flow.shape[0], -1)])
    duration = cat(
        [np.where(is_comp, ops["duration_ps"].to_numpy(), op_latency), np.zeros(gen_flow.shape[0])]
    )
    names = pl.Series(_KINDS)
    algos = pl.Series(algorithm_names())
    frame = pl.DataFrame(
        {
            "node_id": np.arange(n_total, dtype=_I64),
            "kind": names.gather(kind_code),
            "src": cat([minus_ops, col("src")]),
            "dst": cat([minus_ops, col("dst")]),
            "rank": rank,
            "size_bytes": cat([np.zeros(n_ops, _I64), col("size")]),
            "duration_ps": duration.astype(_I64),
            "deps": deps,
            "op_id": label_op,
            "collective": labels["collective"],
            "algorithm": algos.gather(cat([op_algo, gen_algo])),
            "step": cat([minus_ops, col("step")]),
            "channel": cat([minus_ops, col("channel")]),
            "phase": labels["phase"],
            "layer": labels["layer"],
            "microbatch": labels["microbatch"],
            "group": labels["group"],
        }
    )
    return frame.select([pl.col(c).cast(t) for c, t in DAG_SCHEMA.items()])
