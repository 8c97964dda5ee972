"""Hierarchical all-reduce: intra-server reduce-scatter, inter-server all-reduce of ``S/g`` among
the members with the same local index (one rail each), intra-server all-gather.

Built by composing ring templates (:func:`~wormsim.collective.template.par` across servers or
rails, :func:`~wormsim.collective.template.seq` across phases): a phase boundary is a per-rank
dependency. Inter-server bytes are cut by ``g`` compared with a flat ring.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from wormsim.collective.ring import ring_aggregate_template, ring_key, ring_template
from wormsim.collective.template import NCCL_WINDOW, Shape, Template, TemplateKey, par, seq

if TYPE_CHECKING:
    from wormsim.collective.config import CollectiveSpec

__all__ = ["HIERARCHICAL", "hierarchical_template", "hierarchical_key", "hierarchical_build"]

#: The algorithm's name (``collective.allreduce: hierarchical``).
HIERARCHICAL = "hierarchical"

_I64 = np.int64


def hierarchical_template(
    n_servers: int,
    per_server: int,
    n_channels: int,
    aggregate_intra: bool = True,
    loops: int = 1,
    window: int = 1,
) -> Template:
    """Hierarchical all-reduce over ``n_servers * per_server`` members (uniform servers).

    Pieces: ``per_server * n_servers * n_channels``; intra chunk ``a`` is the contiguous block
    ``a``, which the rail of local index ``a`` all-reduces in the middle phase.

    Parameters
    ----------
    n_servers, per_server : int
    n_channels : int
        Channels of the inter-server rings (intra rings use one).
    aggregate_intra : bool
        Intra-server phases as one flow per ring edge (``intra_node: aggregate``).
    loops, window : int
        NCCL loops and window of the inter-server rings (see :func:`ring_template`).
    """
    g, big_n = per_server, n_servers
    n = g * big_n
    sub = big_n * n_channels * loops  # pieces per intra chunk
    q = g * sub

    def intra(kind: str) -> Template:
        t = ring_aggregate_template(kind, g) if aggregate_intra else ring_template(kind, g, 1)
        parts = [(t, s * g + np.arange(g, dtype=_I64), 0, sub) for s in range(big_n)]
        return par(parts, n, q)

    inter = ring_template("allreduce", big_n, n_channels, 0, loops, window)
    rails = [(inter, np.arange(big_n, dtype=_I64) * g + a, a * sub, 1) for a in range(g)]
    return seq(seq(intra("reducescatter"), par(rails, n, q)), intra("allgather"))


def hierarchical_key(shape: Shape, channels: int, spec: CollectiveSpec) -> TemplateKey:
    """The template key of a hierarchical all-reduce; a flat ring's (:func:`ring_key`) when
    there is nothing to split hierarchically (one server, or one member per server)."""
    s = shape
    if s.n_servers <= 1 or s.per_server <= 1:
        return ring_key(s, channels, spec)
    chunked = spec.granularity == "nccl_chunks"
    g = s.per_server
    loops = max(1, math.ceil(s.size / g / (channels * s.n_servers * spec.nccl_chunk_bytes)))
    return TemplateKey(
        HIERARCHICAL,
        s.kind,
        s.n,
        channels,
        s.n_servers,
        g,
        loops if chunked else 1,
        NCCL_WINDOW if chunked else 1,
        spec.intra_node == "aggregate",
    )


def hierarchical_build(key: TemplateKey) -> Template:
    """The hierarchical template of a key made by :func:`hierarchical_key`."""
    return hierarchical_template(
        key.n_servers, key.per_server, key.channels, key.aggregate_intra, key.loops, key.window
    )
