"""Canonical keys of Flow Conflict Graphs, and memo namespaces.

A memo lookup goes in three steps (paper §4.3):

1. **bucket** by a Weisfeiler–Lehman hash of the weighted graph (:func:`wl_hash`; vertex and edge
   weights both enter the hash), plus the vertex and edge counts;
2. **confirm** by weighted graph isomorphism (networkx VF2, :func:`find_isomorphism`), which also
   yields the mapping new flow -> stored vertex;
3. in the store, graphs are kept in a **canonical serialisation** (:func:`canonical_form`):
   vertices numbered ``0..n-1`` in WL colour order (ties broken by input order), their rate
   buckets, and the sorted weighted edge list. Asymmetric graphs (every vertex gets its own WL
   colour) serialise identically whatever their flow ids; for symmetric ones two isomorphic
   graphs may serialise differently, which VF2 resolves. Per-flow values are stored in this vertex
   order, so any isomorphic partition can read them through its mapping.

The **namespace** is a hash of everything outside the FCG that shapes the transient
(:func:`namespace_key`); entries of different namespaces never match.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher

from wormsim.memo.errors import MemoError

__all__ = [
    "wl_hash_arrays",
    "WL_ITERATIONS",
    "NAMESPACE_FIELDS",
    "CanonicalForm",
    "wl_hash",
    "canonical_form",
    "graph_from_canonical",
    "find_isomorphism",
    "namespace_key",
    "namespace_id",
    "canonical_json",
]

WL_ITERATIONS = 3
"""WL refinement rounds; part of the key (changing it invalidates stored buckets)."""

NAMESPACE_FIELDS: tuple[str, ...] = (
    "cc",
    "cc_params",
    "link_rates_bps",
    "link_delays_ps",
    "buffer_bytes",
    "mtu_bytes",
    "ecn",
    "pfc",
    "detector",
)
"""Keys :func:`namespace_key` requires (``strict=True``); a value may be ``None`` for "off".

``cc``
    Congestion-control name (``"hpcc"``, ``"dcqcn"``, ...).
``cc_params``
    *All* its parameters, defaults included (a dict).
``link_rates_bps``
    Sorted distinct rates of the links in the partition.
``link_delays_ps``
    Sorted distinct propagation delays of those links, or an RTT-class label.
``buffer_bytes``
    Switch buffer size (and, inside the value, the sharing/threshold policy if not default).
``mtu_bytes``
    MTU / payload per packet (and header bytes if configurable).
``ecn``
    Marking settings (Kmin, Kmax, Pmax per link speed), or ``None`` when off.
``pfc``
    PFC settings (on/off, thresholds, headroom), or ``None`` when off.
``detector``
    The steady-state detector (theta, window, sampling period): it decides where a transient
    ends, hence ``T_conv``, ``Size_f`` and the end rates.

Add any other field that changes the transient (ACK interval, an engine-model version, ...).
"""

_NAMESPACE_SCHEMA = 1  # hashed with the params; bump when the meaning of a field changes


@dataclass(frozen=True)
class CanonicalForm:
    """A graph's canonical serialisation.

    Attributes
    ----------
    order : tuple
        ``order[i]`` is the flow id placed at canonical vertex ``i``.
    weights : tuple of int
        Rate bucket of each canonical vertex.
    edges : tuple of (int, int, int)
        ``(i, j, shared_links)`` with ``i < j``, sorted.
    wl_hash : str
        The WL bucket (:func:`wl_hash`).
    text : str
        Compact JSON of ``weights`` and ``edges``: what the store keeps.
    """

    order: tuple[Hashable, ...]
    weights: tuple[int, ...]
    edges: tuple[tuple[int, int, int], ...]
    wl_hash: str
    text: str

    @property
    def n_flows(self) -> int:
        """Number of vertices."""
        return len(self.weights)

    @property
    def n_edges(self) -> int:
        """Number of edges."""
        return len(self.edges)


def _wl_input(g: nx.Graph) -> tuple[list[Hashable], list[str], list[list[tuple[int, str]]]]:
    """Vertices, their initial WL labels (``v<bucket>``) and, per vertex, ``(neighbour, edge
    label e<weight>:)``: the graph as :func:`_wl` reads it, weights checked."""
    nodes = list(g.nodes)
    index = {u: i for i, u in enumerate(nodes)}
    labels = []
    for u, w in g.nodes(data="weight"):
        if not isinstance(w, int) or isinstance(w, bool):
            raise MemoError(f"FCG vertex {u!r} needs an int 'weight' (rate bucket), got {w!r}")
        labels.append(f"v{w}")
    edges = []
    for u, v, w in g.edges(data="weight"):
        if not isinstance(w, int) or isinstance(w, bool) or w < 1:
            raise MemoError(f"FCG edge {u!r}-{v!r} needs an int 'weight' >= 1, got {w!r}")
        edges.append((index[u], index[v], w))
    return nodes, labels, _adjacency(len(nodes), edges)


def _adjacency(n: int, edges: Iterable[tuple[int, int, int]]) -> list[list[tuple[int, str]]]:
    """Per vertex ``0..n-1``, ``(neighbour, edge label e<weight>:)`` of ``edges`` ``(i, j, w)``."""
    adj: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    for i, j, w in edges:
        e, i, j = f"e{int(w)}:", int(i), int(j)
        adj[i].append((j, e))
        if j != i:  # (a self-loop is one neighbour, as networkx counts it)
            adj[j].append((i, e))
    return adj


def _wl(labels: list[str], adj: list[list[tuple[int, str]]]) -> tuple[list[str], str]:
    """Weisfeiler–Lehman refinement of vertex ``labels`` over ``adj`` (see :func:`_wl_input`):
    each vertex's colour after :data:`WL_ITERATIONS` rounds and the graph hash.

    The same strings, hashes and digest size as networkx's ``weisfeiler_lehman_graph_hash`` and
    ``weisfeiler_lehman_subgraph_hashes`` (node and edge attribute ``wl``, 16-byte digests), so
    stored buckets stay valid, in one pass over plain lists rather than through networkx's graph
    views, since memo lookups at 1,024 GPUs hash thousands of 100-flow graphs.
    """
    counts: list[tuple[str, int]] = []
    for _ in range(WL_ITERATIONS):
        labels = [
            hashlib.blake2b(
                (own + "".join(sorted([e + labels[j] for j, e in nbrs]))).encode("ascii"),
                digest_size=16,
            ).hexdigest()
            for own, nbrs in zip(labels, adj, strict=True)
        ]
        counts.extend(sorted(Counter(labels).items()))
    graph = hashlib.blake2b(str(tuple(counts)).encode("ascii"), digest_size=16).hexdigest()
    return labels, graph


def wl_hash(g: nx.Graph) -> str:
    """Weisfeiler–Lehman hash of an FCG with vertex and edge weights (32 hex digits).

    Examples
    --------
    >>> a = nx.Graph([(1, 2, {"weight": 1})]); nx.set_node_attributes(a, 7, "weight")
    >>> b = nx.relabel_nodes(a, {1: "x", 2: "y"})
    >>> wl_hash(a) == wl_hash(b)
    True
    """
    _, labels, adj = _wl_input(g)
    return _wl(labels, adj)[1]


def wl_hash_arrays(
    weights: Sequence[int], i: Sequence[int], j: Sequence[int], shared: Sequence[int]
) -> str:
    """:func:`wl_hash` of the FCG with vertex weights ``weights`` (vertices ``0..n-1``) and
    edges ``(i[k], j[k])`` sharing ``shared[k]`` links, without building the graph: the same
    hash as ``wl_hash`` of that graph, for a lookup that only needs the bucket.

    Examples
    --------
    >>> from wormsim.memo.fcg import build_fcg
    >>> g = build_fcg([("a", 1e9, [1]), ("b", 2e9, [1, 2]), ("c", 1e9, [2])])
    >>> w = [g.nodes[u]["weight"] for u in g]
    >>> wl_hash_arrays(w, [0, 1], [1, 2], [1, 1]) == wl_hash(g)
    True
    """
    labels = [f"v{int(w)}" for w in weights]
    return _wl(labels, _adjacency(len(labels), zip(i, j, shared, strict=True)))[1]


def canonical_form(g: nx.Graph) -> CanonicalForm:
    """The canonical serialisation of an FCG (see the module docstring).

    Examples
    --------
    >>> from wormsim.memo.fcg import build_fcg
    >>> g = build_fcg([("a", 1e9, [1]), ("b", 2e9, [1, 2]), ("c", 1e9, [2])])
    >>> h = build_fcg([("z", 2e9, [5, 6]), ("y", 1e9, [6]), ("x", 1e9, [5])])
    >>> canonical_form(g).text == canonical_form(h).text
    True
    """
    if g.number_of_nodes() == 0:
        raise MemoError("an FCG needs at least one flow")
    if g.is_directed() or g.is_multigraph():
        raise MemoError("an FCG is a simple undirected graph (networkx.Graph)")
    nodes, labels, adj = _wl_input(g)
    colours, graph_hash = _wl(labels, adj)
    weight = dict(g.nodes(data="weight"))
    order_i = sorted(range(len(nodes)), key=lambda i: (weight[nodes[i]], colours[i], i))
    order = tuple(nodes[i] for i in order_i)
    index = {u: i for i, u in enumerate(order)}
    weights = tuple(weight[u] for u in order)
    edges = tuple(
        sorted(
            (min(index[u], index[v]), max(index[u], index[v]), w)
            for u, v, w in g.edges(data="weight")
        )
    )
    text = json.dumps({"w": weights, "e": edges}, separators=(",", ":"))
    return CanonicalForm(order, weights, edges, graph_hash, text)


def graph_from_canonical(text: str) -> nx.Graph:
    """Rebuild the FCG (vertices ``0..n-1``) from :attr:`CanonicalForm.text`."""
    try:
        data = json.loads(text)
        g = nx.Graph()
        g.add_nodes_from((i, {"weight": int(w)}) for i, w in enumerate(data["w"]))
        g.add_edges_from((int(i), int(j), {"weight": int(w)}) for i, j, w in data["e"])
    except (ValueError, KeyError, TypeError) as exc:
        raise MemoError(f"corrupt canonical FCG {text[:60]!r}: {exc}") from None
    return g


def find_isomorphism(new: nx.Graph, stored: nx.Graph) -> dict[Hashable, Hashable] | None:
    """A weight-preserving isomorphism ``new vertex -> stored vertex``, or ``None`` (VF2).

    Vertex weights (rate buckets) and edge weights (shared links) must be equal under the map.

    Examples
    --------
    >>> from wormsim.memo.fcg import build_fcg
    >>> g = build_fcg([("a", 1e9, [1]), ("b", 2e9, [1])])
    >>> find_isomorphism(g, graph_from_canonical(canonical_form(g).text))
    {'a': 0, 'b': 1}
    """
    if (new.number_of_nodes(), new.number_of_edges()) != (
        stored.number_of_nodes(),
        stored.number_of_edges(),
    ):
        return None
    gm = GraphMatcher(
        new,
        stored,
        node_match=lambda a, b: a.get("weight") == b.get("weight"),
        edge_match=lambda a, b: a.get("weight") == b.get("weight"),
    )
    return dict(gm.mapping) if gm.is_isomorphic() else None


def _plain(value: Any, where: str) -> Any:
    """``value`` as plain JSON data: numpy scalars unwrapped, integral floats made int."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()  # numpy scalar
        except (TypeError, ValueError):
            value = value.tolist()  # numpy array
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MemoError(f"namespace value {where} must be finite, got {value}")
        return int(value) if value.is_integer() else value
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise MemoError(f"namespace keys must be strings, got {k!r} in {where}")
            out[k] = _plain(v, f"{where}.{k}")
        return out
    raise MemoError(
        f"namespace value {where} has type {type(value).__name__}; use str, number, bool, None, "
        "lists or dicts"
    )


def canonical_json(params: Mapping[str, Any]) -> str:
    """Sorted, compact JSON of a namespace dict (integral floats written as ints)."""
    return json.dumps(_plain(params, "params"), sort_keys=True, separators=(",", ":"))


def namespace_key(params: Mapping[str, Any], *, strict: bool = True) -> str:
    """A stable 64-hex-digit hash of everything besides the FCG that shapes a transient.

    Parameters
    ----------
    params : mapping
        JSON-like dict; with ``strict`` it must hold every key of :data:`NAMESPACE_FIELDS`.
        ``100e9`` and ``100_000_000_000`` hash alike; key order does not matter.
    strict : bool
        Require :data:`NAMESPACE_FIELDS` (default), so no shaping parameter is forgotten.

    Examples
    --------
    >>> p = dict.fromkeys(NAMESPACE_FIELDS) | {"cc": "hpcc", "link_rates_bps": [100e9]}
    >>> q = dict(reversed(list(p.items()))) | {"link_rates_bps": [100_000_000_000]}
    >>> namespace_key(p) == namespace_key(q), namespace_key(p) == namespace_key(p | {"cc": "x"})
    (True, False)
    """
    if not isinstance(params, Mapping):
        raise MemoError(f"a namespace is a dict of parameters, got {type(params).__name__}")
    if strict:
        missing = [k for k in NAMESPACE_FIELDS if k not in params]
        if missing:
            raise MemoError(
                f"namespace is missing {', '.join(missing)}; give every field of "
                "NAMESPACE_FIELDS (None for 'off'), or pass strict=False"
            )
    payload = canonical_json({"schema": _NAMESPACE_SCHEMA, "params": params})
    return hashlib.sha256(payload.encode()).hexdigest()


def namespace_id(namespace: str | Mapping[str, Any]) -> tuple[str, str | None]:
    """(namespace key, canonical params JSON or ``None`` when given as a bare key)."""
    if isinstance(namespace, str):
        if len(namespace) != 64 or any(c not in "0123456789abcdef" for c in namespace):
            raise MemoError(
                f"namespace {namespace[:70]!r} is not a namespace_key() hash; pass the params dict"
                " or namespace_key(params)"
            )
        return namespace, None
    return namespace_key(namespace), canonical_json(namespace)
