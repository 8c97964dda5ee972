"""Stored memo rows: decoding with validation, isomorphic matching, and the fingerprint.

A row read from the store is untrusted: any column may hold garbage (a crash of the disk, an
edit by hand, another program). :func:`decode_row` checks every column that a lookup uses and
returns ``None`` for a row it cannot use, so callers skip it (a miss) instead of crashing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, NamedTuple

import networkx as nx

from wormsim.memo.key import CanonicalForm, find_isomorphism, graph_from_canonical
from wormsim.memo.records import MemoHit

__all__ = [
    "ENTRY_COLS",
    "StoredRow",
    "decode_row",
    "match_rows",
    "hit_from_row",
    "fingerprint_rows",
    "EMPTY_FINGERPRINT",
    "GraphCache",
]

ENTRY_COLS = (
    "id, namespace, quantizer, wl_hash, n_flows, n_edges, canon, end_rates_bps, sent_bytes, "
    "t_conv_ps, created_s, version, hits, last_hit_s"
)
"""The ``entries`` columns, in the order :func:`decode_row` reads them; ``cc_state`` follows
(a column stores made before it existed gain when first opened for writing; read-only opens of
such a store select an empty state instead)."""

_FINGERPRINTED = (0, 2, 3, 4, 5, 6, 7, 8, 9, 14)
"""Columns a lookup's answer depends on: id, quantizer, WL hash, sizes, canon and the values
(not the namespace, fixed per run, nor creation time, version or hit counts)."""


class StoredRow(NamedTuple):
    """A validated entry row (values in canonical vertex order)."""

    entry_id: int
    quantizer: str
    wl_hash: str
    n_flows: int
    n_edges: int
    canon: str
    end_rates_bps: tuple[float, ...]
    sent_bytes: tuple[int, ...]
    t_conv_ps: int
    created_s: float
    version: str
    hits: int
    cc_state: tuple[tuple[float, ...], ...] = ()

    @property
    def bucket(self) -> tuple[str, str, int, int]:
        """What a lookup selects candidates by (besides the namespace)."""
        return self.quantizer, self.wl_hash, self.n_flows, self.n_edges


def _int(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"not an integer: {x!r}")
    return x


def _check_canon(canon: str, n_flows: int, n_edges: int) -> None:
    data = json.loads(canon)
    weights, edges = data["w"], data["e"]
    if len(weights) != n_flows or len(edges) != n_edges:
        raise ValueError("canonical form does not match the row's sizes")
    for w in weights:
        _int(w)
    for i, j, w in edges:
        if not (0 <= _int(i) < _int(j) < n_flows and _int(w) >= 1):
            raise ValueError(f"bad edge {(i, j, w)}")


def decode_row(raw: Sequence[Any]) -> StoredRow | None:
    """The row as a :class:`StoredRow`, or ``None`` if any column a lookup uses is corrupt."""
    try:
        n_flows, n_edges = _int(raw[4]), _int(raw[5])
        if n_flows < 1 or n_edges < 0 or not isinstance(raw[6], str):
            return None
        _check_canon(raw[6], n_flows, n_edges)
        rates = tuple(float(r) for r in json.loads(raw[7]))
        sent = tuple(_int(b) for b in json.loads(raw[8]))
        t_conv = _int(raw[9])
        if len(rates) != n_flows or len(sent) != n_flows or t_conv < 0:
            return None
        if not all(math.isfinite(r) and r >= 0 for r in rates) or min(sent) < 0:
            return None
        created = float(raw[10]) if isinstance(raw[10], int | float) else math.nan
        hits = raw[12] if isinstance(raw[12], int) else 0
        cc = tuple(tuple(float(x) for x in v) for v in json.loads(raw[14])) if len(raw) > 14 else ()
        if cc and (len(cc) != n_flows or not all(math.isfinite(x) for v in cc for x in v)):
            return None
        return StoredRow(
            _int(raw[0]), str(raw[2]), str(raw[3]), n_flows, n_edges, raw[6], rates, sent,
            t_conv, created, str(raw[11]), hits, cc,
        )  # fmt: skip
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
        return None


def match_rows(
    rows: Iterable[StoredRow],
    fcg: nx.Graph,
    cf: CanonicalForm,
    graph_of: Callable[[str], nx.Graph],
) -> tuple[StoredRow, dict[Hashable, int]] | None:
    """The first row (in the given order) isomorphic to ``fcg``, and the mapping.

    Parameters
    ----------
    rows : iterable of StoredRow
        Candidates of ``fcg``'s bucket, oldest first.
    fcg, cf : networkx.Graph, CanonicalForm
        The partition's FCG and its canonical form.
    graph_of : callable
        Canonical text -> graph (a cache of :func:`~wormsim.memo.key.graph_from_canonical`).
    """
    rows = list(rows)
    for row in rows:
        if row.canon == cf.text:
            return row, {f: i for i, f in enumerate(cf.order)}
    for row in rows:
        mapping = find_isomorphism(fcg, graph_of(row.canon))
        if mapping is not None:
            return row, mapping
    return None


def hit_from_row(row: StoredRow, mapping: dict[Hashable, int], hits: int) -> MemoHit:
    """The row's values keyed by the looked-up partition's flow ids."""
    return MemoHit(
        entry_id=row.entry_id,
        mapping=mapping,
        end_rates_bps={f: row.end_rates_bps[i] for f, i in mapping.items()},
        sent_bytes={f: row.sent_bytes[i] for f, i in mapping.items()},
        t_conv_ps=row.t_conv_ps,
        hits=hits,
        created_s=row.created_s,
        version=row.version,
        cc_state={f: row.cc_state[i] for f, i in mapping.items()} if row.cc_state else {},
    )


class GraphCache:
    """Graphs of canonical texts, bounded (keyed by the text, so ids never alias)."""

    def __init__(self, limit: int = 4096) -> None:
        self._graphs: dict[str, nx.Graph] = {}
        self._limit = limit

    def __call__(self, canon: str) -> nx.Graph:
        g = self._graphs.get(canon)
        if g is None:
            if len(self._graphs) >= self._limit:
                self._graphs.clear()
            g = self._graphs[canon] = graph_from_canonical(canon)
        return g


def fingerprint_rows(raw_rows: Iterable[Sequence[Any]]) -> str:
    """16 hex digits of SHA-256 over the lookup-relevant columns of ``raw_rows`` (in order).

    Raw values (before decoding) are hashed, so corrupt rows count too.
    """
    h = hashlib.sha256()
    for raw in raw_rows:
        h.update(repr(tuple(raw[i] for i in _FINGERPRINTED)).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


EMPTY_FINGERPRINT = fingerprint_rows(())
"""The fingerprint of a store with no entry in the run's namespace (e.g. a fresh store)."""
