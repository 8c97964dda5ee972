"""Writing the memo store: inserts, hit counts, merging another store, clearing.

Concurrency and crash safety: WAL journal, a busy timeout, and short explicit transactions. An
insert runs ``BEGIN IMMEDIATE`` (one writer at a time), looks for an isomorphic entry of the same
bucket and adds its row only if there is none, so concurrent writers never duplicate a pattern and
the first writer's value wins (a corrupt row with the same key is replaced). A process killed
mid-write leaves an open transaction that SQLite rolls back on the next open. Keep the file on a
local file system (WAL needs shared memory).
"""

from __future__ import annotations

import json
import math
import operator
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from wormsim import __version__
from wormsim.memo.connection import StoreConnection
from wormsim.memo.errors import MemoError
from wormsim.memo.fcg import fcg_quantizer_spec
from wormsim.memo.key import CanonicalForm, canonical_form, namespace_id
from wormsim.memo.reads import bucket_rows
from wormsim.memo.records import Inserted, MemoEntry
from wormsim.memo.rows import match_rows

__all__ = ["StoreWrites"]

_MERGED_COLS = (
    "namespace, quantizer, wl_hash, n_flows, n_edges, canon, end_rates_bps, "
    "sent_bytes, t_conv_ps, created_s, version, hits, last_hit_s"
)
"""The ``entries`` columns :meth:`StoreWrites.merge` copies (``cc_state`` is added apart, since
the source store may lack it)."""


class StoreWrites(StoreConnection):
    """The writing operations of :class:`~wormsim.memo.store.MemoStore` (errors on a read-only
    store)."""

    def insert(
        self, fcg: nx.Graph, namespace: str | Mapping[str, Any], entry: MemoEntry
    ) -> Inserted:
        """Store the transient observed for ``fcg`` unless an isomorphic entry exists.

        Parameters
        ----------
        fcg : networkx.Graph
            The partition's ``FCG_start``.
        namespace : str or mapping
            As in :meth:`~wormsim.memo.reads.StoreReads.lookup`; a params dict is also recorded
            for :meth:`~wormsim.memo.reads.StoreReads.stats`.
        entry : MemoEntry
            Values keyed by ``fcg``'s flow ids (every flow, no other).

        Returns
        -------
        Inserted
            The id of the new or already present entry; ``created`` is False when one existed
            (its value is kept: first writer wins).
        """
        return self.insert_form(fcg, canonical_form(fcg), namespace, entry)

    def insert_form(
        self,
        fcg: nx.Graph,
        cf: CanonicalForm,
        namespace: str | Mapping[str, Any],
        entry: MemoEntry,
    ) -> Inserted:
        """:meth:`insert` with ``fcg``'s canonical form already computed."""
        ns, params = namespace_id(namespace)
        quantizer = fcg_quantizer_spec(fcg)
        rates, sent, t_conv, cc = self.entry_values(cf.order, entry)
        now = time.time()
        with self._write() as conn:
            if params is not None:
                conn.execute("INSERT OR IGNORE INTO namespaces VALUES (?, ?, ?)", (ns, params, now))
            rows = bucket_rows(conn, ns, quantizer, cf, self.corrupt_ids)
            found = match_rows(rows, fcg, cf, self._graphs)
            if found is not None:
                return Inserted(found[0].entry_id, False)
            values = (ns, quantizer, cf.wl_hash, cf.n_flows, cf.n_edges, cf.text)
            values += (json.dumps(rates), json.dumps(sent), t_conv, now, __version__)
            values += (json.dumps(cc),)
            return _insert_row(conn, values)

    @staticmethod
    def entry_values(
        order: tuple[Any, ...], entry: MemoEntry
    ) -> tuple[list[float], list[int], int, list[list[float]]]:
        """Validated (end rates, sent bytes, ``T_conv``, CC state) of ``entry``, in canonical
        ``order`` (the CC state is empty or one list per flow)."""
        flows = set(order)
        for name, values in (
            ("end_rates_bps", entry.end_rates_bps),
            ("sent_bytes", entry.sent_bytes),
        ):
            if set(values) != flows:
                extra, missing = set(values) - flows, flows - set(values)
                missing_s, extra_s = sorted(map(repr, missing))[:5], sorted(map(repr, extra))[:5]
                raise MemoError(
                    f"entry.{name} must have one value per FCG flow "
                    f"(missing {missing_s}, extra {extra_s})"
                )
        rates = [float(entry.end_rates_bps[f]) for f in order]
        if not all(math.isfinite(r) and r >= 0 for r in rates):
            raise MemoError("entry.end_rates_bps must be finite and >= 0")
        sent = [_as_int(entry.sent_bytes[f], "sent_bytes") for f in order]
        if any(b < 0 for b in sent):
            raise MemoError("entry.sent_bytes must be >= 0")
        t_conv = _as_int(entry.t_conv_ps, "t_conv_ps")
        if t_conv < 0:
            raise MemoError(f"t_conv_ps must be >= 0, got {t_conv}")
        cc: list[list[float]] = []
        if entry.cc_state:
            if set(entry.cc_state) != flows:
                raise MemoError("entry.cc_state must be empty or have one value per FCG flow")
            cc = [[float(x) for x in entry.cc_state[f]] for f in order]
            if not all(math.isfinite(x) for v in cc for x in v):
                raise MemoError("entry.cc_state must be finite")
        return rates, sent, t_conv, cc

    def add_hits(self, counts: Mapping[int, int]) -> None:
        """Add hits that a caller served from its own cache (``entry id -> count``)."""
        now = time.time()
        with self._write() as conn:
            conn.executemany(
                "UPDATE entries SET hits = hits + ?, last_hit_s = ? WHERE id = ?",
                [(int(n), now, int(i)) for i, n in counts.items() if n > 0],
            )

    def merge(self, other: str | Path) -> int:
        """Add the entries (and namespaces) of the store file ``other`` that this store lacks.

        An entry is the same when its key is (namespace, quantizer, WL hash, canonical FCG): the
        entry already here wins, as for concurrent inserts (first writer wins). Hit counts of
        entries already here are not changed. Returns how many entries were added.

        Raises
        ------
        MemoError
            ``other`` is not a readable wormsim store.
        """
        src = StoreConnection(other, readonly=True)  # refuses a foreign or damaged file
        uri = f"{src.path.resolve().as_uri()}?mode=ro"
        conn = self._connection()
        with self._guard():
            conn.execute("ATTACH DATABASE ? AS src", (uri,))  # not allowed inside a transaction
            try:
                src_cols = {r[1] for r in conn.execute("PRAGMA src.table_info(entries)")}
                cc = ", cc_state" if "cc_state" in src_cols else ", '[]'"
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("INSERT OR IGNORE INTO namespaces SELECT * FROM src.namespaces")
                    before = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
                    conn.execute(
                        f"INSERT OR IGNORE INTO entries ({_MERGED_COLS}, cc_state) "
                        f"SELECT {_MERGED_COLS}{cc} FROM src.entries"
                    )
                    added = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0] - before
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            finally:
                conn.execute("DETACH DATABASE src")
        return int(added)

    def clear(self, namespace: str | None = None) -> int:
        """Delete all entries, or those of one namespace key; returns how many were deleted."""
        with self._write() as conn:
            if namespace is None:
                n = conn.execute("DELETE FROM entries").rowcount
                conn.execute("DELETE FROM namespaces")
            else:
                n = conn.execute("DELETE FROM entries WHERE namespace = ?", (namespace,)).rowcount
                conn.execute("DELETE FROM namespaces WHERE namespace = ?", (namespace,))
        return n


def _as_int(x: Any, what: str) -> int:
    """``x`` as an int (an integral float too), else a :class:`MemoError` naming ``what``."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    try:
        return operator.index(x)
    except TypeError:
        raise MemoError(f"{what} must be an integer, got {x!r}") from None


def _insert_row(conn: sqlite3.Connection, values: tuple[Any, ...]) -> Inserted:
    """Insert one entry row inside the caller's write transaction.

    The caller found no usable entry with this key, so a row that still holds it is corrupt and
    is replaced.
    """
    key = (values[0], values[1], values[2], values[5])
    conn.execute(
        "DELETE FROM entries WHERE namespace=? AND quantizer=? AND wl_hash=? AND canon=?", key
    )
    cur = conn.execute(
        "INSERT INTO entries (namespace, quantizer, wl_hash, n_flows, n_edges, canon, "
        "end_rates_bps, sent_bytes, t_conv_ps, created_s, version, cc_state) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )
    return Inserted(int(cur.lastrowid), True)
