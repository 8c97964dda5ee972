"""The collective algorithms wormsim expands, one row each: the single source of their names, the
collectives they serve, their template builders and how the selector treats them.

Everything that lists or dispatches on algorithms is derived from :data:`TABLE`: the
``collective.<kind>`` choices of :class:`~wormsim.collective.config.CollectiveSpec`
(:func:`choices`), the selector's candidates and its
:data:`~wormsim.collective.selector.ALGORITHMS`, the labels of the DAG's ``algorithm`` column
(:func:`~wormsim.collective.plan.algorithm_names`) and the template dispatch of
:mod:`~wormsim.collective.plan` and :mod:`~wormsim.collective.expand`. To add an algorithm:
write its module (its name constant, a ``*_key`` and a ``*_build`` function, like
:mod:`~wormsim.collective.ring`) and add its row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wormsim.collective.alltoall import DIRECT, direct_build, direct_key
from wormsim.collective.errors import CollectiveError
from wormsim.collective.halving_doubling import (
    HALVING_DOUBLING,
    halving_doubling_build,
    halving_doubling_key,
)
from wormsim.collective.hierarchical import HIERARCHICAL, hierarchical_build, hierarchical_key
from wormsim.collective.p2p import P2P, p2p_build, p2p_key
from wormsim.collective.ring import RING, ring_build, ring_key
from wormsim.collective.template import Shape, Template, TemplateKey
from wormsim.collective.tree import TREE, tree_build, tree_key
from wormsim.workload.ops import COLLECTIVES

if TYPE_CHECKING:
    from wormsim.collective.config import CollectiveSpec

__all__ = [
    "AUTO",
    "RING",
    "TREE",
    "HALVING_DOUBLING",
    "HIERARCHICAL",
    "DIRECT",
    "P2P",
    "Algorithm",
    "always",
    "across_uniform_servers",
    "TABLE",
    "names",
    "by_name",
    "serving",
    "choices",
]

#: The ``collective.<kind>`` value that lets the selector choose.
AUTO = "auto"

AutoRule = Callable[[bool, bool], bool]
"""``rule(uniform, intra)``: whether ``auto`` considers the algorithm for a group whose servers
all hold the same number of members (``uniform``) and that lies in one server (``intra``)."""


def always(uniform: bool, intra: bool) -> bool:
    """``auto`` considers it for every group."""
    return True


def across_uniform_servers(uniform: bool, intra: bool) -> bool:
    """``auto`` considers it across servers that all hold the same number of members."""
    return uniform and not intra


@dataclass(frozen=True)
class Algorithm:
    """One collective algorithm.

    Attributes
    ----------
    name : the ``collective.<kind>`` value and the DAG's ``algorithm`` label.
    collectives : the collective kinds it serves (of ``wormsim.workload.ops.COLLECTIVES``).
    key : ``key(shape, channels, spec)``: the :class:`~wormsim.collective.template.TemplateKey`
        of a group of instances (its ``algorithm`` may name another row, e.g. a hierarchical
        all-reduce within one server is a flat ring).
    build : ``build(key)``: the template of a key it made.
    title : how it is named in prose.
    nccl_model : the selector's NCCL cost model
        (:func:`~wormsim.collective.selector.collective_time_us`) prices it: ``auto`` picks
        the cheapest of the priced candidates, with the protocol and channels that model
        gives. An unpriced algorithm runs the Simple protocol.
    auto : which groups ``auto`` considers it for (``None``: only when named).
    ring_channels : unpriced: as many channels as a Simple-protocol ring of the same size
        (else one channel).
    sender_first : its members are (sender, receiver), not in rank order.
    split_sizes : its flows are sized by the ops' ``split_bytes`` (an uneven all-to-all).
    step_latency : inside one server, its completion adds ``nvlink_step_latency_ns`` per step.
    """

    name: str
    collectives: tuple[str, ...]
    key: Callable[[Shape, int, CollectiveSpec], TemplateKey]
    build: Callable[[TemplateKey], Template]
    title: str
    nccl_model: bool = False
    auto: AutoRule | None = None
    ring_channels: bool = False
    sender_first: bool = False
    split_sizes: bool = False
    step_latency: bool = True


_REDUCE = ("allreduce", "reducescatter", "allgather")

# fmt: off
TABLE: tuple[Algorithm, ...] = (
    Algorithm(RING, _REDUCE, ring_key, ring_build,
              "ring (NCCL, SimAI), rotated per channel across servers",
              nccl_model=True, auto=always),
    Algorithm(TREE, ("allreduce",), tree_key, tree_build,
              "double binary tree across servers, a chain inside each (NCCL Tree)",
              nccl_model=True, auto=across_uniform_servers),
    Algorithm(HALVING_DOUBLING, ("allreduce",), halving_doubling_key, halving_doubling_build,
              "halving-doubling (Rabenseifner)", ring_channels=True),
    Algorithm(HIERARCHICAL, ("allreduce",), hierarchical_key, hierarchical_build,
              "intra-server reduce-scatter, inter-server ring per rail, intra-server all-gather",
              ring_channels=True),
    Algorithm(DIRECT, ("alltoall",), direct_key, direct_build,
              "direct all-to-all: n-1 independent rounds", auto=always, split_sizes=True),
    Algorithm(P2P, ("send", "recv"), p2p_key, p2p_build,
              "one flow (or a chain of chunks) from sender to receiver",
              auto=always, sender_first=True, step_latency=False),
)
# fmt: on
"""Every algorithm; a collective's first row is its default family. Every lookup reads this
tuple when it is made (:func:`names`, :func:`by_name`, :func:`serving`), so a row added to it
is selectable, planned and labelled."""


def names() -> tuple[str, ...]:
    """The algorithm names, in table order."""
    return tuple(a.name for a in TABLE)


def by_name(name: str) -> Algorithm:
    """The row of algorithm ``name``.

    Raises
    ------
    CollectiveError
        If no row has that name.
    """
    for a in TABLE:
        if a.name == name:
            return a
    raise CollectiveError(f"algorithm {name!r} is unknown; use one of {list(names())}")


def serving(collective: str) -> tuple[Algorithm, ...]:
    """The algorithms serving ``collective``, in table order.

    Raises
    ------
    CollectiveError
        If none does.
    """
    rows = tuple(a for a in TABLE if collective in a.collectives)
    if not rows:
        served = [c for c in COLLECTIVES if any(c in a.collectives for a in TABLE)]
        raise CollectiveError(f"collective {collective!r} is unknown; use one of {sorted(served)}")
    return rows


def choices(collective: str) -> tuple[str, ...]:
    """The values ``collective.<collective>`` accepts: ``auto``, then the algorithms serving it."""
    return (AUTO, *(a.name for a in serving(collective)))
