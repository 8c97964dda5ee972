"""Per-shape plan: which template each collective instance uses.

Instances are grouped by shape (collective, members, servers, members per server, size, uneven
split); the selector and template parameters are computed once per shape, and instances sharing a
template form a bucket that :mod:`wormsim.collective.expand` stamps in one go.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from wormsim.collective.alltoall import alltoall_template
from wormsim.collective.config import CollectiveSpec
from wormsim.collective.halving_doubling import halving_doubling_template
from wormsim.collective.hierarchical import hierarchical_template
from wormsim.collective.instances import COLL_CODES, Instances
from wormsim.collective.p2p import p2p_template
from wormsim.collective.ring import ring_aggregate_template, ring_template
from wormsim.collective.selector import select_algorithm
from wormsim.collective.template import Template
from wormsim.collective.tree import tree_template
from wormsim.workload.ops import COLLECTIVES

__all__ = ["ALGORITHM_NAMES", "NCCL_WINDOW", "TemplateKey", "plan_buckets", "build_template"]

#: Algorithm labels of the DAG's ``algorithm`` column (index = internal code).
ALGORITHM_NAMES = ("", "ring", "tree", "halving_doubling", "hierarchical", "direct", "p2p")
_ALGO_CODE = {a: i for i, a in enumerate(ALGORITHM_NAMES)}
#: Chunk-flows in flight per connection in ``nccl_chunks`` mode (4 slices of 1 MiB).
NCCL_WINDOW = 2


@dataclass(frozen=True)
class TemplateKey:
    """Everything a template depends on (instances with equal keys share one template)."""

    variant: str  # ring | ring_agg | tree | halving_doubling | hierarchical | direct | p2p
    kind: str
    n: int
    channels: int
    n_servers: int
    per_server: int
    loops: int  # ring loops, tree chunks, p2p chunks
    window: int
    aggregate_intra: bool = False


def _key_for(
    kind: str, n: int, n_servers: int, per_server: int, size: int, spec: CollectiveSpec
) -> tuple[str, TemplateKey]:
    choice = select_algorithm(kind, size, n, n_servers, spec, uniform=per_server > 0)
    algo, nch = choice.algorithm, choice.channels
    chunked = spec.granularity == "nccl_chunks"
    window = NCCL_WINDOW if chunked else 1
    if algo == "hierarchical" and (n_servers <= 1 or per_server <= 1):
        algo = "ring"  # nothing to split hierarchically: a flat ring is the same thing
    if algo == "p2p":
        k = max(1, math.ceil(size / spec.p2p_chunk_bytes)) if spec.p2p_chunk_bytes else 1
        return algo, TemplateKey("p2p", "send", 2, 1, n_servers, 0, k, 1)
    if algo == "direct":
        return algo, TemplateKey("direct", kind, n, 1, n_servers, 0, 1, 1)
    if algo == "tree":
        ns, ps = (n_servers, per_server) if per_server > 0 else (n, 1)
        k = max(1, math.ceil(size / nch / spec.tree_chunk_bytes))
        return algo, TemplateKey("tree", kind, n, nch, ns, ps, k, 1)
    if algo == "halving_doubling":
        return algo, TemplateKey("halving_doubling", kind, n, nch, n_servers, per_server, 1, 1)
    loops = max(1, math.ceil(size / (nch * n * spec.nccl_chunk_bytes))) if chunked else 1
    if algo == "hierarchical":
        g = per_server
        loops = max(1, math.ceil(size / g / (nch * n_servers * spec.nccl_chunk_bytes)))
        loops = loops if chunked else 1
        return algo, TemplateKey(
            "hierarchical",
            kind,
            n,
            nch,
            n_servers,
            g,
            loops,
            window,
            spec.intra_node == "aggregate",
        )
    if n_servers <= 1 and spec.intra_node == "aggregate":
        return "ring", TemplateKey("ring_agg", kind, n, 1, 1, n, 1, 1)
    return "ring", TemplateKey("ring", kind, n, nch, n_servers, per_server, loops, window)


def build_template(key: TemplateKey) -> Template:
    """Build the template of a key."""
    if key.variant == "ring":
        return ring_template(key.kind, key.n, key.channels, key.per_server, key.loops, key.window)
    if key.variant == "ring_agg":
        return ring_aggregate_template(key.kind, key.n)
    if key.variant == "tree":
        return tree_template(key.n_servers, key.per_server, key.channels, key.loops)
    if key.variant == "halving_doubling":
        return halving_doubling_template(key.n, key.channels)
    if key.variant == "hierarchical":
        return hierarchical_template(
            key.n_servers,
            key.per_server,
            key.channels,
            key.aggregate_intra,
            key.loops,
            key.window,
        )
    if key.variant == "direct":
        return alltoall_template(key.n)
    return p2p_template(key.loops)


def plan_buckets(
    inst: Instances, spec: CollectiveSpec
) -> tuple[np.ndarray, list[TemplateKey], np.ndarray]:
    """Assign every instance to a bucket.

    Returns
    -------
    bucket : int64[I]
        Bucket index per instance.
    keys : list of TemplateKey
        Template key per bucket.
    algo : int64[n_buckets]
        Algorithm code (:data:`ALGORITHM_NAMES`) per bucket.
    """
    cols = ("kind", "n", "n_servers", "per_server", "size")
    table = pl.DataFrame(
        dict(
            zip(cols, (inst.kind, inst.n, inst.n_servers, inst.per_server, inst.size), strict=True)
        )
    )
    uniq = table.unique(maintain_order=True).with_row_index("shape")
    shape_id = table.join(uniq, on=list(cols), how="left", maintain_order="left")["shape"]
    shape_id = shape_id.to_numpy().astype(np.int64)
    keys: dict[TemplateKey, int] = {}
    algos: list[int] = []
    shape_bucket = np.zeros(uniq.height, dtype=np.int64)
    for i, kind, n, n_servers, per_server, size in uniq.iter_rows():
        algo, key = _key_for(COLLECTIVES[kind], n, n_servers, per_server, size, spec)
        if key not in keys:
            keys[key] = len(keys)
            algos.append(_ALGO_CODE[algo])
        shape_bucket[i] = keys[key]
    bucket = shape_bucket[shape_id]
    return bucket, list(keys), np.asarray(algos, dtype=np.int64)


assert set(COLL_CODES) == set(COLLECTIVES)
