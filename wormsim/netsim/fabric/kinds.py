"""The fabric kinds ``cluster.topology`` chooses from, one row each: the single source of their
names, builders, the cluster fields they read and their descriptions.

The ``cluster.topology`` choices of :class:`~wormsim.netsim.fabric.cluster.ClusterSpec`
(:func:`names`) and the dispatch of :func:`~wormsim.netsim.fabric.builders.build_topology`
(:func:`kind`) are derived from :data:`KINDS`. To add a kind: write its builder in
:mod:`~wormsim.netsim.fabric.builders` (``build_<kind>(cluster) -> networkx.Graph``, hosts first)
and add its row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import networkx as nx

from wormsim.netsim.errors import NetsimInputError
from wormsim.netsim.fabric.builders import build_clos, build_fat_tree, build_rail_optimized

if TYPE_CHECKING:
    from wormsim.netsim.fabric.cluster import ClusterSpec

__all__ = ["TopologyKind", "KINDS", "names", "kind"]

_LINKS = ("host_link_gbps", "fabric_link_gbps", "link_delay_ns")


@dataclass(frozen=True)
class TopologyKind:
    """One fabric kind.

    Attributes
    ----------
    name : the ``cluster.topology`` value.
    build : ``build(cluster)``: the fabric as a networkx graph (hosts ``0..gpus-1`` first,
        then the switches; see :mod:`~wormsim.netsim.fabric.builders`).
    fields : the :class:`~wormsim.netsim.fabric.cluster.ClusterSpec` fields the builder reads
        (every kind also reads ``gpus_per_node`` and ``nvlink_gbps`` for the NVLink domains).
    description : one line, for the docs.
    """

    name: str
    build: Callable[[ClusterSpec], nx.Graph]
    fields: tuple[str, ...]
    description: str


# fmt: off
KINDS: tuple[TopologyKind, ...] = (
    TopologyKind("rail_optimized", build_rail_optimized,
                 ("gpus", "gpus_per_node", "hosts_per_leaf", *_LINKS, "oversubscription"),
                 "two tiers: one leaf per (pod, rail), every leaf to every spine (ROFT)"),
    TopologyKind("fat_tree", build_fat_tree, ("gpus", *_LINKS),
                 "k-ary fat-tree (Al-Fares et al.), the smallest even k that holds every GPU"),
    TopologyKind("clos", build_clos, ("gpus", "hosts_per_leaf", *_LINKS, "oversubscription"),
                 "leaf-spine with consecutive hosts per leaf"),
)
# fmt: on
"""Every fabric kind, in the order of the ``cluster.topology`` choices (the first is the
default). :func:`kind` reads this tuple when it is called, so a row added to it is built."""


def names() -> tuple[str, ...]:
    """The ``cluster.topology`` values, in table order."""
    return tuple(k.name for k in KINDS)


def kind(name: str) -> TopologyKind:
    """The row of the kind ``name``.

    Raises
    ------
    NetsimInputError
        If no row has that name.
    """
    for k in KINDS:
        if k.name == name:
            return k
    raise NetsimInputError(f"cluster.topology {name!r} is unknown; use one of {list(names())}")
