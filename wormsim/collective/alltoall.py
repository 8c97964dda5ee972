"""Direct all-to-all: ``n-1`` independent rounds, round ``i`` sends ``r -> (r+i) mod n``.

NCCL issues the rounds as one group, so every flow of member ``r`` depends only on ``r``'s op
deps; a member's op node depends on every flow into and out of it. Sizes come from the per-rank
send buffer split evenly over the members (``size_bytes // n``, remainder to the first
destinations), or exactly from ``split_bytes`` (one entry per member, in member order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from wormsim.collective.errors import CollectiveError
from wormsim.collective.template import Shape, Template, TemplateKey, empty_template

if TYPE_CHECKING:
    from wormsim.collective.config import CollectiveSpec

__all__ = [
    "DIRECT",
    "alltoall_template",
    "alltoall_sizes",
    "even_split",
    "direct_key",
    "direct_build",
]

#: The algorithm's name (``collective.alltoall: direct``).
DIRECT = "direct"

_I64 = np.int64


def alltoall_template(n: int) -> Template:
    """Direct all-to-all over ``n`` members (flow ``(i-1) * n + r`` is round ``i`` from ``r``)."""
    if n <= 1:
        return empty_template(max(n, 1))
    i, r = (a.ravel() for a in np.indices((n - 1, n), dtype=_I64))
    src = r
    dst = (r + i + 1) % n
    f = np.arange(src.shape[0], dtype=_I64)
    return Template.build(
        n,
        n,
        src=src,
        dst=dst,
        step=i,
        channel=np.zeros_like(i),
        lo=dst,
        hi=dst + 1,
        inherit=(f, src),
        done=(np.concatenate([src, dst]), np.concatenate([f, f])),
        n_steps=1,
    )


def even_split(size: np.ndarray, n: int) -> np.ndarray:
    """Split per-rank buffers ``int64[I, n]`` evenly over ``n`` destinations: ``int64[I, n, n]``."""
    base, rem = np.divmod(size, n)
    j = np.arange(n, dtype=_I64)
    return base[..., None] + (j < rem[..., None])


def alltoall_sizes(t: Template, split: np.ndarray) -> np.ndarray:
    """Flow sizes ``int64[I, T]`` from a split matrix ``split[i, src, dst]``."""
    n = t.n_members
    if split.ndim != 3 or split.shape[1:] != (n, n):
        raise CollectiveError(
            f"split_bytes must hold one entry per member ({n}) on every row of an all-to-all"
        )
    return split[:, np.maximum(t.src, 0), np.maximum(t.dst, 0)] * t.is_flow[None, :]


def direct_key(shape: Shape, channels: int, spec: CollectiveSpec) -> TemplateKey:
    """The template key of a direct all-to-all (one channel)."""
    return TemplateKey(DIRECT, shape.kind, shape.n, 1, shape.n_servers, 0, 1, 1)


def direct_build(key: TemplateKey) -> Template:
    """The all-to-all template of a key made by :func:`direct_key`."""
    return alltoall_template(key.n)
