"""The Flow Conflict Graph (FCG) of a partition (paper §4.2).

Vertex = flow, vertex weight = its quantized sending rate (an integer bucket, see
:mod:`wormsim.memo.quantize`); edge ``(i, j)`` iff flows ``i`` and ``j`` cross at least one common
link, edge weight = the number of links they share. The graph ignores path length and position in
the topology on purpose: it describes a contention pattern independently of where it occurs.

Link ids are opaque hashables chosen by the caller. wormsim's engine passes the *directed* egress
ports of a flow's data route and of its ACK route, the same ports its partition is built from
(ACKs and CNPs share switch queues with data), so two flows coupled only through
acknowledgements are adjacent too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

import networkx as nx

from wormsim.memo.errors import MemoError
from wormsim.memo.quantize import DEFAULT_QUANTIZER, RateQuantizer

__all__ = ["FlowSpec", "build_fcg", "fcg_quantizer_spec"]


class FlowSpec(NamedTuple):
    """One flow of a partition: its id, its current sending rate (bits/s) and its route.

    ``route`` is the sequence of link/port ids the flow crosses; repeats count once.
    """

    flow_id: Hashable
    rate_bps: float
    route: Sequence[Hashable]


def build_fcg(
    flows: Iterable[FlowSpec | tuple[Hashable, float, Sequence[Hashable]]],
    quantizer: RateQuantizer = DEFAULT_QUANTIZER,
) -> nx.Graph:
    """Build the Flow Conflict Graph of one partition.

    Parameters
    ----------
    flows : iterable of FlowSpec or (flow_id, rate_bps, route)
        The partition's flows; ids must be unique.
    quantizer : RateQuantizer
        Turns rates into vertex weights; its spec is kept in ``G.graph["quantizer"]``.

    Returns
    -------
    networkx.Graph
        Nodes are flow ids with attributes ``weight`` (rate bucket, int) and ``rate_bps``; edges
        carry ``weight`` (shared links, int >= 1).

    Notes
    -----
    Cost O(sum over links of (flows on the link)^2): pairs are counted link by link.

    Examples
    --------
    >>> g = build_fcg([("a", 1e9, [1, 2]), ("b", 1e9, [2, 3]), ("c", 1e9, [9])])
    >>> sorted(g.edges(data="weight")), g.number_of_nodes()
    ([('a', 'b', 1)], 3)
    """
    g = nx.Graph(quantizer=quantizer.spec)
    on_link: dict[Hashable, list[Hashable]] = defaultdict(list)
    for spec in flows:
        try:
            flow_id, rate_bps, route = spec
        except (TypeError, ValueError):
            raise MemoError(f"a flow must be (flow_id, rate_bps, route), got {spec!r}") from None
        if flow_id in g:
            raise MemoError(f"flow id {flow_id!r} appears twice in one partition")
        g.add_node(flow_id, weight=quantizer.bucket(rate_bps), rate_bps=float(rate_bps))
        for link in dict.fromkeys(route):
            on_link[link].append(flow_id)
    shared: dict[tuple[Hashable, Hashable], int] = defaultdict(int)
    for members in on_link.values():
        for i, u in enumerate(members):
            for v in members[i + 1 :]:
                shared[(u, v)] += 1
    for (u, v), w in shared.items():
        if g.has_edge(u, v):  # (v, u) was counted on another link
            g[u][v]["weight"] += w
        else:
            g.add_edge(u, v, weight=w)
    return g


def fcg_quantizer_spec(g: nx.Graph) -> str:
    """The quantizer spec an FCG was built with (``MemoError`` if it has none)."""
    spec = g.graph.get("quantizer")
    if not isinstance(spec, str):
        raise MemoError("graph has no 'quantizer' attribute; build it with build_fcg()")
    return spec
