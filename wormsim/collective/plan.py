"""Per-shape plan: which template each collective instance uses.

Instances are grouped by shape (collective, members, servers, members per server, size, uneven
split); the selector and template parameters are computed once per shape, and instances sharing a
template form a bucket that :mod:`wormsim.collective.expand` stamps in one go.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from wormsim.collective.algorithms import by_name, names
from wormsim.collective.config import CollectiveSpec
from wormsim.collective.instances import COLL_CODES, Instances
from wormsim.collective.selector import select_algorithm
from wormsim.collective.template import NCCL_WINDOW, Shape, Template, TemplateKey
from wormsim.workload.ops import COLLECTIVES

__all__ = ["algorithm_names", "NCCL_WINDOW", "TemplateKey", "plan_buckets", "build_template"]


def algorithm_names() -> tuple[str, ...]:
    """Labels of the DAG's ``algorithm`` column (index = internal code; 0: no algorithm)."""
    return ("", *names())


def _key_for(shape: Shape, spec: CollectiveSpec) -> TemplateKey:
    s = shape
    choice = select_algorithm(s.kind, s.size, s.n, s.n_servers, spec, uniform=s.per_server > 0)
    return by_name(choice.algorithm).key(shape, choice.channels, spec)


def build_template(key: TemplateKey) -> Template:
    """Build the template of a key (by its algorithm's builder)."""
    return by_name(key.algorithm).build(key)


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
        Algorithm code (:func:`algorithm_names`) per bucket.
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
    code = {a: i for i, a in enumerate(algorithm_names())}
    keys: dict[TemplateKey, int] = {}
    algos: list[int] = []
    shape_bucket = np.zeros(uniq.height, dtype=np.int64)
    for i, kind, n, n_servers, per_server, size in uniq.iter_rows():
        key = _key_for(Shape(COLLECTIVES[kind], n, n_servers, per_server, size), spec)
        if key not in keys:
            keys[key] = len(keys)
            algos.append(code[key.algorithm])
        shape_bucket[i] = keys[key]
    bucket = shape_bucket[shape_id]
    return bucket, list(keys), np.asarray(algos, dtype=np.int64)


assert set(COLL_CODES) == set(COLLECTIVES)
