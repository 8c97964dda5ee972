"""The persistent memo store: one SQLite file shared by runs and processes (paper §4.3, §5).

A row holds one transient: the key (namespace, rate quantizer, WL hash, canonical FCG
serialisation) and the value (paper §5: ``FCG_end``'s per-vertex steady rates, the bytes each flow
sent during the transient ``Size_f``, and its duration ``T_conv``), plus metadata (creation time,
wormsim version, hit count). Per-flow values are stored in canonical vertex order
(:func:`wormsim.memo.key.canonical_form`) and handed back through the isomorphism mapping.

Concurrency and crash safety: WAL journal, a busy timeout, and short explicit transactions. An
insert runs ``BEGIN IMMEDIATE`` (one writer at a time), looks for an isomorphic entry of the same
bucket and adds its row only if there is none, so concurrent writers never duplicate a pattern and
the first writer's value wins. A process killed mid-write leaves an open transaction that SQLite
rolls back on the next open. Keep the file on a local file system (WAL needs shared memory).
"""

from __future__ import annotations

import json
import math
import operator
import os
import sqlite3
import time
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import networkx as nx

from wormsim import __version__
from wormsim.memo.errors import MemoError
from wormsim.memo.fcg import fcg_quantizer_spec
from wormsim.memo.key import (
    canonical_form,
    canonical_json,
    find_isomorphism,
    graph_from_canonical,
    namespace_key,
)
from wormsim.memo.records import EntryInfo, Inserted, MemoEntry, MemoHit, MemoStats, NamespaceStats

__all__ = ["SCHEMA_VERSION", "default_store_path", "MemoStore"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS namespaces (
    namespace TEXT PRIMARY KEY,
    params TEXT NOT NULL,
    created_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    quantizer TEXT NOT NULL,
    wl_hash TEXT NOT NULL,
    n_flows INTEGER NOT NULL,
    n_edges INTEGER NOT NULL,
    canon TEXT NOT NULL,
    end_rates_bps TEXT NOT NULL,
    sent_bytes TEXT NOT NULL,
    t_conv_ps INTEGER NOT NULL,
    created_s REAL NOT NULL,
    version TEXT NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    last_hit_s REAL,
    UNIQUE (namespace, quantizer, wl_hash, canon)
);
CREATE INDEX IF NOT EXISTS entries_bucket
    ON entries (namespace, quantizer, wl_hash, n_flows, n_edges);
"""

_ENTRY_COLS = (
    "id, namespace, quantizer, wl_hash, n_flows, n_edges, canon, end_rates_bps, sent_bytes, "
    "t_conv_ps, created_s, version, hits, last_hit_s"
)


def default_store_path() -> Path:
    """``$XDG_CACHE_HOME/wormsim/memo.sqlite``, i.e. ``~/.cache/wormsim/memo.sqlite`` by default."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "wormsim" / "memo.sqlite"


def _as_int(x: Any, what: str) -> int:
    if isinstance(x, float) and x.is_integer():
        return int(x)
    try:
        return operator.index(x)
    except TypeError:
        raise MemoError(f"{what} must be an integer, got {x!r}") from None


def _ns_key(namespace: str | Mapping[str, Any]) -> tuple[str, str | None]:
    """(key, canonical params JSON or None)."""
    if isinstance(namespace, str):
        if len(namespace) != 64 or any(c not in "0123456789abcdef" for c in namespace):
            raise MemoError(
                f"namespace {namespace[:70]!r} is not a namespace_key() hash; pass the params dict"
                " or namespace_key(params)"
            )
        return namespace, None
    return namespace_key(namespace), canonical_json(namespace)


class MemoStore:
    """A SQLite-backed, multi-process memo store.

    Parameters
    ----------
    path : str or Path, optional
        The store file; :func:`default_store_path` when omitted.
    create : bool
        Create the file (and its directory) if missing; with ``False`` a missing file is a
        :class:`MemoError`.
    timeout_s : float
        How long to wait for another process's write lock before giving up.

    Notes
    -----
    The connection opens lazily and is reopened after ``fork``; a store pickles as its path, so it
    can be passed to pool workers. Use one instance per thread.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from wormsim.memo.fcg import build_fcg
    >>> ns = {"cc": "hpcc"}  # real callers pass every NAMESPACE_FIELDS key
    >>> from wormsim.memo.key import namespace_key
    >>> key = namespace_key(ns, strict=False)
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with MemoStore(d / "m.sqlite") as store:
    ...     g = build_fcg([(1, 100e9, ["l0"]), (2, 100e9, ["l0"])])
    ...     entry = MemoEntry({1: 50e9, 2: 50e9}, {1: 1000, 2: 900}, 5_000_000)
    ...     _ = store.insert(g, key, entry)
    ...     hit = store.lookup(build_fcg([("a", 101e9, ["x"]), ("b", 99e9, ["x"])]), key)
    >>> sorted(hit.sent_bytes.values()), hit.t_conv_ps
    ([900, 1000], 5000000)
    """

    def __init__(
        self, path: str | Path | None = None, *, create: bool = True, timeout_s: float = 30.0
    ) -> None:
        self._path = Path(path).expanduser() if path is not None else default_store_path()
        self._create = create
        self._timeout_s = float(timeout_s)
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._graphs: dict[int, nx.Graph] = {}
        self._connection()  # fail early on a missing or foreign file

    # -- connection -------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The store file."""
        return self._path

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self._path, "create": self._create, "timeout_s": self._timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], create=state["create"], timeout_s=state["timeout_s"])

    def __enter__(self) -> MemoStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the store reopens on next use)."""
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            if "not a database" in msg or "malformed" in msg:
                raise MemoError(f"{self._path} is not a wormsim memo store ({msg})") from None
            raise MemoError(f"memo store {self._path}: {msg}") from None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None  # inherited across fork: abandon, never close, the parent's handle
        self._graphs.clear()
        path = self._path
        if path.is_dir():
            raise MemoError(f"memo store {path} is a directory; give a file path")
        if not path.exists():
            if not self._create:
                raise MemoError(f"memo store not found: {path}")
            path.parent.mkdir(parents=True, exist_ok=True)
        mode = "rwc" if self._create else "rw"
        with self._guard():
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode={mode}",
                uri=True,
                timeout=self._timeout_s,
                isolation_level=None,
            )
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            if tables - {"sqlite_sequence"}:
                raise MemoError(f"{self._path} is an SQLite file but not a wormsim memo store")
            if not self._create:
                raise MemoError(f"{self._path} is empty, not a wormsim memo store")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        if "meta" not in tables:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or row[0] != str(SCHEMA_VERSION):
            found = row[0] if row else "none"
            raise MemoError(
                f"{self._path} has memo schema version {found}, this wormsim reads "
                f"{SCHEMA_VERSION}; use another --store path or clear it"
            )

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction, serialised across processes."""
        conn = self._connection()
        with self._guard():
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _stored_graph(self, entry_id: int, canon: str) -> nx.Graph:
        g = self._graphs.get(entry_id)
        if g is None:
            if len(self._graphs) > 4096:
                self._graphs.clear()
            g = self._graphs[entry_id] = graph_from_canonical(canon)
        return g

    def _match(
        self, conn: sqlite3.Connection, fcg: nx.Graph, ns: str, quantizer: str, cf: Any
    ) -> tuple[tuple[Any, ...], dict[Hashable, int]] | None:
        """The first stored row isomorphic to ``fcg`` and the mapping, or ``None``."""
        rows = conn.execute(
            f"SELECT {_ENTRY_COLS} FROM entries WHERE namespace=? AND quantizer=? AND wl_hash=? "
            "AND n_flows=? AND n_edges=? ORDER BY id",
            (ns, quantizer, cf.wl_hash, cf.n_flows, cf.n_edges),
        ).fetchall()
        for row in rows:
            if row[6] == cf.text:
                return row, {f: i for i, f in enumerate(cf.order)}
        for row in rows:
            mapping = find_isomorphism(fcg, self._stored_graph(row[0], row[6]))
            if mapping is not None:
                return row, mapping
        return None

    # -- API --------------------------------------------------------------------------------
    def lookup(
        self, fcg: nx.Graph, namespace: str | Mapping[str, Any], *, count_hit: bool = True
    ) -> MemoHit | None:
        """Find a stored transient for a partition's start FCG.

        Parameters
        ----------
        fcg : networkx.Graph
            ``FCG_start`` from :func:`~wormsim.memo.fcg.build_fcg`.
        namespace : str or mapping
            :func:`~wormsim.memo.key.namespace_key` hash, or the params dict itself.
        count_hit : bool
            Increment the entry's hit count (best effort: skipped if the store stays locked).

        Returns
        -------
        MemoHit or None
            The entry mapped onto ``fcg``'s flow ids, or ``None`` on a miss.
        """
        ns, _ = _ns_key(namespace)
        quantizer = fcg_quantizer_spec(fcg)
        cf = canonical_form(fcg)
        conn = self._connection()
        with self._guard():
            found = self._match(conn, fcg, ns, quantizer, cf)
        if found is None:
            return None
        row, mapping = found
        hits = row[12]
        if count_hit:
            try:
                conn.execute(
                    "UPDATE entries SET hits = hits + 1, last_hit_s = ? WHERE id = ?",
                    (time.time(), row[0]),
                )
                hits += 1
            except sqlite3.OperationalError:
                pass
        rates, sent = json.loads(row[7]), json.loads(row[8])
        return MemoHit(
            entry_id=row[0],
            mapping=mapping,
            end_rates_bps={f: float(rates[i]) for f, i in mapping.items()},
            sent_bytes={f: int(sent[i]) for f, i in mapping.items()},
            t_conv_ps=int(row[9]),
            hits=hits,
            created_s=float(row[10]),
            version=row[11],
        )

    def insert(
        self, fcg: nx.Graph, namespace: str | Mapping[str, Any], entry: MemoEntry
    ) -> Inserted:
        """Store the transient observed for ``fcg`` unless an isomorphic entry exists.

        Parameters
        ----------
        fcg : networkx.Graph
            The partition's ``FCG_start``.
        namespace : str or mapping
            As in :meth:`lookup`; a params dict is also recorded for :meth:`stats`.
        entry : MemoEntry
            Values keyed by ``fcg``'s flow ids (every flow, no other).

        Returns
        -------
        Inserted
            The id of the new or already present entry; ``created`` is False when one existed
            (its value is kept: first writer wins).
        """
        ns, params = _ns_key(namespace)
        quantizer = fcg_quantizer_spec(fcg)
        cf = canonical_form(fcg)
        rates, sent = self._values(cf.order, entry)
        t_conv = _as_int(entry.t_conv_ps, "t_conv_ps")
        if t_conv < 0:
            raise MemoError(f"t_conv_ps must be >= 0, got {t_conv}")
        now = time.time()
        with self._write() as conn:
            if params is not None:
                conn.execute("INSERT OR IGNORE INTO namespaces VALUES (?, ?, ?)", (ns, params, now))
            found = self._match(conn, fcg, ns, quantizer, cf)
            if found is not None:
                return Inserted(found[0][0], False)
            values = (ns, quantizer, cf.wl_hash, cf.n_flows, cf.n_edges, cf.text)
            values += (json.dumps(rates), json.dumps(sent), t_conv, now, __version__)
            return _insert_row(conn, values)

    @staticmethod
    def _values(order: tuple[Hashable, ...], entry: MemoEntry) -> tuple[list[float], list[int]]:
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
        return rates, sent

    def add_hits(self, counts: Mapping[int, int]) -> None:
        """Add hits that a caller served from its own cache (``entry id -> count``)."""
        now = time.time()
        with self._write() as conn:
            conn.executemany(
                "UPDATE entries SET hits = hits + ?, last_hit_s = ? WHERE id = ?",
                [(int(n), now, int(i)) for i, n in counts.items() if n > 0],
            )

    def entries(self, limit: int = 20, namespace: str | None = None) -> list[EntryInfo]:
        """Stored entries, most hit first (then oldest first).

        Parameters
        ----------
        limit : int
            At most this many (``<= 0``: all).
        namespace : str, optional
            Only this namespace key, or a prefix of it.
        """
        sql = f"SELECT {_ENTRY_COLS} FROM entries"
        args: list[Any] = []
        if namespace:
            sql += " WHERE substr(namespace, 1, ?) = ?"
            args += [len(namespace), namespace]
        sql += " ORDER BY hits DESC, id ASC"
        if limit > 0:
            sql += " LIMIT ?"
            args.append(int(limit))
        conn = self._connection()
        with self._guard():
            rows = conn.execute(sql, args).fetchall()
        out = []
        for r in rows:
            canon = json.loads(r[6])
            out.append(
                EntryInfo(
                    entry_id=r[0],
                    namespace=r[1],
                    quantizer=r[2],
                    wl_hash=r[3],
                    n_flows=r[4],
                    n_edges=r[5],
                    weights=tuple(canon["w"]),
                    edges=tuple(tuple(e) for e in canon["e"]),
                    end_rates_bps=tuple(json.loads(r[7])),
                    sent_bytes=tuple(json.loads(r[8])),
                    t_conv_ps=r[9],
                    created_s=r[10],
                    version=r[11],
                    hits=r[12],
                    last_hit_s=r[13],
                )
            )
        return out

    def stats(self) -> MemoStats:
        """Totals over the store and per namespace."""
        conn = self._connection()
        with self._guard():
            n, hits = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(hits), 0) FROM entries"
            ).fetchone()
            rows = conn.execute(
                "SELECT e.namespace, COUNT(*), SUM(e.hits), MAX(e.n_flows), n.params "
                "FROM entries e LEFT JOIN namespaces n ON n.namespace = e.namespace "
                "GROUP BY e.namespace ORDER BY COUNT(*) DESC, e.namespace"
            ).fetchall()
        size = sum(p.stat().st_size for p in (self._path, Path(f"{self._path}-wal")) if p.exists())
        per_ns = tuple(
            NamespaceStats(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None) for r in rows
        )
        return MemoStats(self._path, size, SCHEMA_VERSION, n, hits, per_ns)

    def clear(self, namespace: str | None = None) -> int:
        """Delete all entries, or those of one namespace key; returns how many were deleted."""
        with self._write() as conn:
            if namespace is None:
                n = conn.execute("DELETE FROM entries").rowcount
                conn.execute("DELETE FROM namespaces")
            else:
                n = conn.execute("DELETE FROM entries WHERE namespace = ?", (namespace,)).rowcount
                conn.execute("DELETE FROM namespaces WHERE namespace = ?", (namespace,))
        self._graphs.clear()
        return n


def _insert_row(conn: sqlite3.Connection, values: tuple[Any, ...]) -> Inserted:
    """Insert one entry row inside the caller's write transaction."""
    cur = conn.execute(
        "INSERT OR IGNORE INTO entries (namespace, quantizer, wl_hash, n_flows, n_edges, canon, "
        "end_rates_bps, sent_bytes, t_conv_ps, created_s, version) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )
    if cur.rowcount == 1:
        return Inserted(int(cur.lastrowid), True)
    row = conn.execute(
        "SELECT id FROM entries WHERE namespace=? AND quantizer=? AND wl_hash=? AND canon=?",
        (values[0], values[1], values[2], values[5]),
    ).fetchone()
    return Inserted(int(row[0]), False)
