"""The persistent memo store: one SQLite file shared by runs and processes (paper §4.3, §5).

A row holds one transient: the key (namespace, rate quantizer, WL hash, canonical FCG
serialisation) and the value (paper §5: ``FCG_end``'s per-vertex steady rates, the bytes each flow
sent during the transient ``Size_f``, and its duration ``T_conv``), plus metadata (creation time,
wormsim version, hit count). Per-flow values are stored in canonical vertex order
(:func:`wormsim.memo.key.canonical_form`) and handed back through the isomorphism mapping.

Where the store is: :func:`resolve_store_path` — an explicit path (``--store``,
``sim.wormhole.memo_path``) wins, then the ``WORMSIM_MEMO_STORE`` environment variable, then
``$XDG_CACHE_HOME/wormsim/memo.sqlite`` (``~/.cache/wormsim/memo.sqlite``).

Opening never modifies a file that is not a wormsim store: the file's header and tables are first
read through a read-only (``immutable`` when no write-ahead log exists) connection, and only a
wormsim store (or a missing or empty file, with ``create``) is then opened for writing and switched
to WAL. A foreign, corrupted or truncated file is a :class:`~wormsim.memo.errors.MemoError` that
names the path and the fix. With ``readonly=True`` nothing is ever written, no journal mode is set
and no ``-wal``/``-shm`` file is created when none exists, so a store on a read-only file or
directory can be read. Rows whose columns do not decode are skipped (a miss), never a crash
(:mod:`wormsim.memo.rows`).

Concurrency and crash safety: WAL journal, a busy timeout, and short explicit transactions. An
insert runs ``BEGIN IMMEDIATE`` (one writer at a time), looks for an isomorphic entry of the same
bucket and adds its row only if there is none, so concurrent writers never duplicate a pattern and
the first writer's value wins (a corrupt row with the same key is replaced). A process killed
mid-write leaves an open transaction that SQLite rolls back on the next open. Keep the file on a
local file system (WAL needs shared memory). Runs read the store through a
:class:`~wormsim.memo.session.MemoSession`, which isolates them from each other's writes.
"""

from __future__ import annotations

import errno
import json
import math
import operator
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import networkx as nx

from wormsim import __version__
from wormsim.memo.errors import MemoError
from wormsim.memo.fcg import fcg_quantizer_spec
from wormsim.memo.key import CanonicalForm, canonical_form, canonical_json, namespace_key
from wormsim.memo.records import EntryInfo, Inserted, MemoEntry, MemoHit, MemoStats, NamespaceStats
from wormsim.memo.rows import (
    ENTRY_COLS,
    GraphCache,
    StoredRow,
    decode_row,
    hit_from_row,
    match_rows,
)

__all__ = [
    "SCHEMA_VERSION",
    "ENV_VAR",
    "default_store_path",
    "resolve_store_path",
    "namespace_id",
    "MemoStore",
]

SCHEMA_VERSION = 1

ENV_VAR = "WORMSIM_MEMO_STORE"
"""Environment variable naming the default store file."""

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
    cc_state TEXT NOT NULL DEFAULT '[]',
    UNIQUE (namespace, quantizer, wl_hash, canon)
);
CREATE INDEX IF NOT EXISTS entries_bucket
    ON entries (namespace, quantizer, wl_hash, n_flows, n_edges);
"""

_OUR_TABLES = frozenset({"meta", "namespaces", "entries"})
_SQLITE_HEADER = b"SQLite format 3\x00"
_T = TypeVar("_T")


def default_store_path() -> Path:
    """The default store: ``$WORMSIM_MEMO_STORE`` if set, else
    ``$XDG_CACHE_HOME/wormsim/memo.sqlite`` (``~/.cache/wormsim/memo.sqlite``)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "wormsim" / "memo.sqlite"


def resolve_store_path(explicit: str | Path | None = None) -> Path:
    """The store file: ``explicit`` (e.g. ``sim.wormhole.memo_path``) if given, else
    :func:`default_store_path` (the environment variable, then the cache directory)."""
    if explicit is not None and str(explicit) != "":
        return Path(explicit).expanduser()
    return default_store_path()


def _fix(path: Path) -> str:
    return (
        f"point --store, {ENV_VAR} or sim.wormhole.memo_path at another file, "
        f"or delete {path} if its contents are not needed"
    )


def _as_int(x: Any, what: str) -> int:
    if isinstance(x, float) and x.is_integer():
        return int(x)
    try:
        return operator.index(x)
    except TypeError:
        raise MemoError(f"{what} must be an integer, got {x!r}") from None


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


def _connect(path: Path, query: str, timeout_s: float) -> sqlite3.Connection:
    return sqlite3.connect(
        f"{path.resolve().as_uri()}?{query}", uri=True, timeout=timeout_s, isolation_level=None
    )


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read_only(path: Path, fn: Callable[[sqlite3.Connection], _T], timeout_s: float) -> _T:
    """``fn`` on a connection that writes nothing, not even ``-wal``/``-shm`` files.

    Without a write-ahead log (no writer, everything checkpointed) the file is read as immutable;
    if it changed meanwhile (a writer started), or a log exists, with shared-memory locking.
    """
    wal = Path(f"{path}-wal")
    if not wal.exists():
        before = _stamp(path)
        conn = _connect(path, "mode=ro&immutable=1", timeout_s)
        try:
            out, err = fn(conn), None
        except sqlite3.DatabaseError as exc:
            out, err = None, exc
        finally:
            conn.close()
        if not wal.exists() and _stamp(path) == before:
            if err is not None:
                raise err
            return out  # type: ignore[return-value]
    conn = _connect(path, "mode=ro", timeout_s)
    try:
        return fn(conn)
    finally:
        conn.close()


def _inspect(conn: sqlite3.Connection) -> tuple[frozenset[str], str | None]:
    """(table names, schema version or ``None``) of an open database."""
    tables = frozenset(
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
    )
    if not _OUR_TABLES <= tables:
        return tables, None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such" in str(exc):  # a 'meta' table of another program
            return tables, None
        raise
    return tables, (str(row[0]) if row else None)


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
    readonly : bool
        Never write (implies ``create=False``): lookups count no hits, inserts are errors, and
        the file and its directory may be read-only.

    Notes
    -----
    The connection opens lazily and is reopened after ``fork``; a store pickles as its path, so it
    can be passed to pool workers. Use one instance per thread. A read-only store opens a short
    connection per call.

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
        self,
        path: str | Path | None = None,
        *,
        create: bool = True,
        timeout_s: float = 30.0,
        readonly: bool = False,
    ) -> None:
        self._path = resolve_store_path(path)
        self._readonly = bool(readonly)
        self._create = bool(create) and not self._readonly
        self._timeout_s = float(timeout_s)
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._graphs = GraphCache()
        self.corrupt_ids: set[Any] = set()
        """Ids of rows skipped because a column did not decode."""
        if self._readonly:
            self._probe()  # fail early on a missing, foreign or unreadable file
        else:
            self._connection()

    # -- connection -------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The store file."""
        return self._path

    @property
    def readonly(self) -> bool:
        """Whether this instance never writes."""
        return self._readonly

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self._path,
            "create": self._create,
            "timeout_s": self._timeout_s,
            "readonly": self._readonly,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(
            state["path"],
            create=state["create"],
            timeout_s=state["timeout_s"],
            readonly=state.get("readonly", False),
        )

    def __enter__(self) -> MemoStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the store reopens on next use)."""
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def _error(self, exc: sqlite3.Error) -> MemoError | OSError:
        """A user-facing error for an SQLite failure on this store (a full disk is the
        ``OSError`` it is, so the CLI gives its one disk-full message)."""
        msg, path = str(exc), self._path
        if "disk is full" in msg or getattr(exc, "sqlite_errorcode", None) == 13:  # SQLITE_FULL
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        if "not a database" in msg or "malformed" in msg or "encrypted" in msg:
            return MemoError(
                f"{path} is not a wormsim memo store or is corrupted ({msg}): {_fix(path)}"
            )
        if "locked" in msg or "busy" in msg:
            return MemoError(
                f"memo store {path} stayed locked by another process for {self._timeout_s:g} s "
                f"({msg}); retry, or give this run a store of its own ({ENV_VAR})"
            )
        if "readonly" in msg or "read-only" in msg or "unable to open" in msg:
            return MemoError(
                f"cannot {'read' if self._readonly else 'write'} memo store {path} ({msg}); "
                "for a store on a read-only file or directory use sim.wormhole.memo_mode=read "
                "(a leftover -wal file there needs one readwrite open first), or "
                f"{_fix(path)}"
            )
        return MemoError(f"memo store {path}: {msg}")

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def _probe(self) -> bool:
        """Check, without modifying anything, that the file is usable; ``True`` if it must be
        initialised (missing or empty, and ``create``)."""
        path = self._path
        if path.is_dir():
            raise MemoError(f"memo store {path} is a directory; give a file path")
        if not path.exists():
            if not self._create:
                hint = " (memo_mode=read needs an existing store)" if self._readonly else ""
                raise MemoError(f"memo store not found: {path}{hint}")
            return True
        try:
            with path.open("rb") as f:
                head = f.read(len(_SQLITE_HEADER))
        except OSError as exc:
            raise MemoError(f"cannot read memo store {path}: {exc.strerror or exc}") from None
        if not head:
            return self._verdict(frozenset(), None)
        if head != _SQLITE_HEADER:
            raise MemoError(
                f"{path} is not a wormsim memo store (not an SQLite file); nothing was changed: "
                f"{_fix(path)}"
            )
        with self._guard():
            tables, version = _read_only(path, _inspect, self._timeout_s)
        return self._verdict(tables, version)

    def _verdict(self, tables: frozenset[str], version: str | None) -> bool:
        """Raise unless the tables are a wormsim store's; ``True`` if it must be initialised."""
        path = self._path
        if not tables - {"sqlite_sequence"}:
            if not self._create:
                raise MemoError(f"{path} is empty, not a wormsim memo store; {_fix(path)}")
            return True
        if version is None:
            raise MemoError(
                f"{path} is an SQLite file but not a wormsim memo store; nothing was changed: "
                f"{_fix(path)}"
            )
        if version != str(SCHEMA_VERSION):
            raise MemoError(
                f"{path} has memo schema version {version}, this wormsim reads "
                f"{SCHEMA_VERSION}; use another --store path or clear it"
            )
        return False

    def _connection(self) -> sqlite3.Connection:
        if self._readonly:
            raise MemoError(
                f"memo store {self._path} was opened read-only (memo_mode=read); it is never "
                "written"
            )
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None  # inherited across fork: abandon, never close, the parent's handle
        if self._path.exists() and not os.access(self._path, os.W_OK):
            raise MemoError(
                f"memo store {self._path} is read-only; use sim.wormhole.memo_mode=read to only "
                f"look up its entries, or {_fix(self._path)}"
            )
        if self._probe():
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise MemoError(
                    f"cannot create memo store {self._path}: {exc.strerror or exc}; "
                    f"use sim.wormhole.memo_mode=off, or {_fix(self._path)}"
                ) from None
        mode = "rwc" if self._create else "rw"
        with self._guard():
            conn = _connect(self._path, f"mode={mode}", self._timeout_s)
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the schema, on a file :meth:`_probe` accepted."""
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        tables, version = _inspect(conn)
        if self._verdict(tables, version):
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
            self._verdict(*_inspect(conn))
        elif not _has_cc_state(conn):  # a store made before entries carried CC state
            conn.execute("ALTER TABLE entries ADD COLUMN cc_state TEXT NOT NULL DEFAULT '[]'")

    def _read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """``fn`` on a connection that can read the store (read-only ones write nothing)."""
        if self._readonly:
            with self._guard():
                return _read_only(self._path, fn, self._timeout_s)
        conn = self._connection()
        with self._guard():
            return fn(conn)

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

    def _decode(self, raw_rows: list[tuple[Any, ...]]) -> list[StoredRow]:
        """The rows that decode; the ids of the others go to :attr:`corrupt_ids`."""
        out = []
        for raw in raw_rows:
            row = decode_row(raw)
            if row is None:
                self.corrupt_ids.add(raw[0])
            else:
                out.append(row)
        return out

    def _bucket_rows(
        self, conn: sqlite3.Connection, ns: str, quantizer: str, cf: CanonicalForm
    ) -> list[StoredRow]:
        raw = conn.execute(
            f"SELECT {_cols(conn)} FROM entries WHERE namespace=? AND quantizer=? AND wl_hash=? "
            "AND n_flows=? AND n_edges=? ORDER BY id",
            (ns, quantizer, cf.wl_hash, cf.n_flows, cf.n_edges),
        ).fetchall()
        return self._decode(raw)

    # -- API --------------------------------------------------------------------------------
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
        rows = self._read(lambda conn: self._bucket_rows(conn, ns, quantizer, cf))
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
            found = match_rows(self._bucket_rows(conn, ns, quantizer, cf), fcg, cf, self._graphs)
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

    def namespace_rows(self, namespace: str) -> list[tuple[Any, ...]]:
        """Every raw row of one namespace key, oldest first (columns :data:`ENTRY_COLS`)."""
        return self._read(
            lambda conn: conn.execute(
                f"SELECT {_cols(conn)} FROM entries WHERE namespace=? ORDER BY id", (namespace,)
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
        raw = self._read(lambda conn: conn.execute(f"SELECT {_cols(conn)}" + sql, args).fetchall())
        by_id = {r[0]: r for r in raw}
        return [_entry_info(by_id[row.entry_id], row) for row in self._decode(raw)]

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

    def snapshot(self, dest: str | Path) -> Path:
        """A consistent copy of the store at ``dest`` (SQLite's online backup: the write-ahead
        log included, other writers not blocked for long). ``dest`` is replaced."""
        dest = Path(dest)
        dest.unlink(missing_ok=True)

        def copy(conn: sqlite3.Connection) -> None:
            out = sqlite3.connect(dest)
            try:
                conn.backup(out)
            finally:
                out.close()

        self._read(copy)
        return dest

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
        src = MemoStore(other, readonly=True)  # refuses a foreign or damaged file
        uri = f"{src.path.resolve().as_uri()}?mode=ro"
        cols = (
            "namespace, quantizer, wl_hash, n_flows, n_edges, canon, end_rates_bps, "
            "sent_bytes, t_conv_ps, created_s, version, hits, last_hit_s"
        )
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
                        f"INSERT OR IGNORE INTO entries ({cols}, cc_state) "
                        f"SELECT {cols}{cc} FROM src.entries"
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


def _params(text: Any) -> dict[str, Any] | None:
    """A namespace's recorded params, or ``None`` if absent or unreadable."""
    try:
        params = json.loads(text) if text else None
    except (TypeError, ValueError):
        return None
    return params if isinstance(params, dict) else None


def _entry_info(raw: tuple[Any, ...], row: StoredRow) -> EntryInfo:
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


def _has_cc_state(conn: sqlite3.Connection) -> bool:
    """Whether the store's ``entries`` table has the ``cc_state`` column."""
    return any(r[1] == "cc_state" for r in conn.execute("PRAGMA table_info(entries)"))


def _cols(conn: sqlite3.Connection) -> str:
    """The columns :func:`~wormsim.memo.rows.decode_row` reads, on this store's table."""
    return ENTRY_COLS + (", cc_state" if _has_cc_state(conn) else ", '[]'")


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
