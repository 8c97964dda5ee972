"""Reading the memo store: lookups, listings and totals.

A lookup selects the rows of the FCG's bucket (namespace, rate quantizer, WL hash, vertex and
edge counts), oldest first, and returns the first one isomorphic to the FCG, mapped onto its flow
ids (:mod:`wormsim.memo.rows`). Rows whose columns do not decode are skipped (a miss), never a
crash, and their ids are kept in :attr:`~wormsim.memo.connection.StoreConnection.corrupt_ids`.
On a read-only store nothing is written, not even hit counts.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from wormsim.memo.connection import StoreConnection
from wormsim.memo.fcg import fcg_quantizer_spec
from wormsim.memo.key import CanonicalForm, canonical_form, namespace_id
from wormsim.memo.records import EntryInfo, MemoHit, MemoStats, NamespaceStats
from wormsim.memo.rows import StoredRow, decode_row, hit_from_row, match_rows
from wormsim.memo.schema import SCHEMA_VERSION, entry_columns

__all__ = ["StoreReads", "bucket_rows", "decode_rows"]


def decode_rows(raw_rows: list[tuple[Any, ...]], corrupt_ids: set[Any]) -> list[StoredRow]:
    """The rows that decode, in order; the ids of the others are added to ``corrupt_ids``."""
    out = []
    for raw in raw_rows:
        row = decode_row(raw)
        if row is None:
            corrupt_ids.add(raw[0])
        else:
            out.append(row)
    return out


def bucket_rows(
    conn: sqlite3.Connection, ns: str, quantizer: str, cf: CanonicalForm, corrupt_ids: set[Any]
) -> list[StoredRow]:
    """The decodable rows of one bucket (the candidates an FCG with canonical form ``cf`` can
    match), oldest first; undecodable ones go to ``corrupt_ids``."""
    raw = conn.execute(
        f"SELECT {entry_columns(conn)} FROM entries WHERE namespace=? AND quantizer=? "
        "AND wl_hash=? AND n_flows=? AND n_edges=? ORDER BY id",
        (ns, quantizer, cf.wl_hash, cf.n_flows, cf.n_edges),
    ).fetchall()
    return decode_rows(raw, corrupt_ids)


class StoreReads(StoreConnection):
    """The reading operations of :class:`~wormsim.memo.store.MemoStore`."""

    def lookup(
        self, fcg: nx.Graph, namespace: str | Mapping[str, Any], *, count_hit: bool = True
    ) -> MemoHit | None:
        """Find a stored transient for a partition's start FCG (in the store as it is now).

        Parameters
        ----------
        fcg : networkx.Graph
            ``FCG_start`` from :func:`~wormsim.memo.fcg.build_fcg`.
        namespace : str or mapping
            :func:`~wormsim.memo.key.namespace_key` hash, or the params dict itself.
        count_hit : bool
            Increment the entry's hit count (best effort: skipped if the store stays locked, and
            always on a read-only store).

        Returns
        -------
        MemoHit or None
            The entry mapped onto ``fcg``'s flow ids, or ``None`` on a miss (corrupt rows are
            skipped).
        """
        ns, _ = namespace_id(namespace)
        quantizer = fcg_quantizer_spec(fcg)
        cf = canonical_form(fcg)
        rows = self._read(lambda conn: bucket_rows(conn, ns, quantizer, cf, self.corrupt_ids))
        found = match_rows(rows, fcg, cf, self._graphs)
        if found is None:
            return None
        row, mapping = found
        hits = row.hits
        if count_hit and not self._readonly:
            try:
                self._connection().execute(
                    "UPDATE entries SET hits = hits + 1, last_hit_s = ? WHERE id = ?",
                    (time.time(), row.entry_id),
                )
                hits += 1
            except sqlite3.OperationalError:
                pass
        return hit_from_row(row, mapping, hits)

    def namespace_rows(self, namespace: str) -> list[tuple[Any, ...]]:
        """Every raw row of one namespace key, oldest first (columns
        :data:`~wormsim.memo.rows.ENTRY_COLS`, then ``cc_state``)."""
        return self._read(
            lambda conn: conn.execute(
                f"SELECT {entry_columns(conn)} FROM entries WHERE namespace=? ORDER BY id",
                (namespace,),
            ).fetchall()
        )

    def entries(self, limit: int = 20, namespace: str | None = None) -> list[EntryInfo]:
        """Stored entries, most hit first (then oldest first); corrupt rows are left out.

        Parameters
        ----------
        limit : int
            At most this many (``<= 0``: all).
        namespace : str, optional
            Only this namespace key, or a prefix of it.
        """
        sql = " FROM entries"
        args: list[Any] = []
        if namespace:
            sql += " WHERE substr(namespace, 1, ?) = ?"
            args += [len(namespace), namespace]
        sql += " ORDER BY hits DESC, id ASC"
        if limit > 0:
            sql += " LIMIT ?"
            args.append(int(limit))
        raw = self._read(
            lambda conn: conn.execute(f"SELECT {entry_columns(conn)}" + sql, args).fetchall()
        )
        by_id = {r[0]: r for r in raw}
        return [_entry_info(by_id[row.entry_id], row) for row in decode_rows(raw, self.corrupt_ids)]

    def stats(self) -> MemoStats:
        """Totals over the store and per namespace."""

        def query(conn: sqlite3.Connection) -> tuple[Any, list[Any]]:
            totals = conn.execute("SELECT COUNT(*), COALESCE(SUM(hits), 0) FROM entries").fetchone()
            rows = conn.execute(
                "SELECT e.namespace, COUNT(*), SUM(e.hits), MAX(e.n_flows), n.params "
                "FROM entries e LEFT JOIN namespaces n ON n.namespace = e.namespace "
                "GROUP BY e.namespace ORDER BY COUNT(*) DESC, e.namespace"
            ).fetchall()
            return totals, rows

        (n, hits), rows = self._read(query)
        size = sum(p.stat().st_size for p in (self._path, Path(f"{self._path}-wal")) if p.exists())
        per_ns = tuple(NamespaceStats(r[0], r[1], r[2], r[3], _params(r[4])) for r in rows)
        return MemoStats(self._path, size, SCHEMA_VERSION, n, hits, per_ns)


def _params(text: Any) -> dict[str, Any] | None:
    """A namespace's recorded params, or ``None`` if absent or unreadable."""
    try:
        params = json.loads(text) if text else None
    except (TypeError, ValueError):
        return None
    return params if isinstance(params, dict) else None


def _entry_info(raw: tuple[Any, ...], row: StoredRow) -> EntryInfo:
    """The listing of one decoded row (``raw``: the same row undecoded, for its namespace and
    last hit time, which decoding does not keep)."""
    canon = json.loads(row.canon)
    last_hit = raw[13] if isinstance(raw[13], int | float) else None
    return EntryInfo(
        entry_id=row.entry_id,
        namespace=str(raw[1]),
        quantizer=row.quantizer,
        wl_hash=row.wl_hash,
        n_flows=row.n_flows,
        n_edges=row.n_edges,
        weights=tuple(canon["w"]),
        edges=tuple(tuple(e) for e in canon["e"]),
        end_rates_bps=row.end_rates_bps,
        sent_bytes=row.sent_bytes,
        t_conv_ps=row.t_conv_ps,
        created_s=row.created_s,
        version=row.version,
        hits=row.hits,
        last_hit_s=last_hit,
    )
