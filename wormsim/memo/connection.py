"""Where the memo store is, and opening it safely: checks, connections, errors.

Where the store is: :func:`resolve_store_path` — an explicit path (``--store``,
``sim.wormhole.memo_path``) wins, then the ``WORMSIM_MEMO_STORE`` environment variable, then
``$XDG_CACHE_HOME/wormsim/memo.sqlite`` (``~/.cache/wormsim/memo.sqlite``).

Opening never modifies a file that is not a wormsim store: the file's header and tables are first
read through a read-only (``immutable`` when no write-ahead log exists) connection, and only a
wormsim store (or a missing or empty file, with ``create``) is then opened for writing and switched
to WAL. A foreign, corrupted or truncated file is a :class:`~wormsim.memo.errors.MemoError` that
names the path and the fix. With ``readonly=True`` nothing is ever written, no journal mode is set
and no ``-wal``/``-shm`` file is created when none exists, so a store on a read-only file or
directory can be read.

:class:`StoreConnection` holds this per-instance machinery; the operations of
:class:`~wormsim.memo.store.MemoStore` (reads, writes, snapshots) run through its
:meth:`~StoreConnection._read` and :meth:`~StoreConnection._write`.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self, TypeVar

from wormsim.memo.errors import MemoError
from wormsim.memo.rows import GraphCache
from wormsim.memo.schema import (
    SCHEMA_VERSION,
    SQLITE_HEADER,
    create_schema,
    inspect_tables,
    migrate,
)

__all__ = ["ENV_VAR", "default_store_path", "resolve_store_path", "StoreConnection"]

ENV_VAR = "WORMSIM_MEMO_STORE"
"""Environment variable naming the default store file."""

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
    """The advice every "unusable store" message ends with."""
    return (
        f"point --store, {ENV_VAR} or sim.wormhole.memo_path at another file, "
        f"or delete {path} if its contents are not needed"
    )


def _connect(path: Path, query: str, timeout_s: float) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit) to ``path`` with URI ``query``."""
    return sqlite3.connect(
        f"{path.resolve().as_uri()}?{query}", uri=True, timeout=timeout_s, isolation_level=None
    )


def _stamp(path: Path) -> tuple[int, int, int]:
    """What changes when another process writes ``path``: inode, size, modification time."""
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


class StoreConnection:
    """One store file: its checks, its connection and the state its operations share.

    Parameters are those of :class:`~wormsim.memo.store.MemoStore`. A writable instance keeps
    one connection, opened lazily and reopened after ``fork``; a read-only one opens a short
    connection per call. An instance pickles as its parameters.
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

    def __enter__(self) -> Self:
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
        """Turn an SQLite failure inside the block into :meth:`_error`'s error."""
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
                head = f.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise MemoError(f"cannot read memo store {path}: {exc.strerror or exc}") from None
        if not head:
            return self._verdict(frozenset(), None)
        if head != SQLITE_HEADER:
            raise MemoError(
                f"{path} is not a wormsim memo store (not an SQLite file); nothing was changed: "
                f"{_fix(path)}"
            )
        with self._guard():
            tables, version = _read_only(path, inspect_tables, self._timeout_s)
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
        """The writable connection of this process, opened (and the file checked) if needed."""
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
                self._prepare_when_free(conn)
            except BaseException:
                conn.close()
                raise
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _prepare_when_free(self, conn: sqlite3.Connection) -> None:
        """:meth:`_prepare`, retried until the timeout while another process holds the file.

        Processes that open a new store at the same moment (the points of a sweep, forked
        together) race to switch it to WAL mode and create its tables; SQLite answers the
        losers "database is locked" at once, without waiting on its busy timeout."""
        deadline = time.monotonic() + self._timeout_s
        pause = 0.005
        while True:
            try:
                self._prepare(conn)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                    raise
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            time.sleep(pause)
            pause = min(2 * pause, 0.5)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the schema (created or migrated), on a file :meth:`_probe` accepted."""
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        if self._verdict(*inspect_tables(conn)):
            create_schema(conn)
            self._verdict(*inspect_tables(conn))
        else:
            migrate(conn)

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
        """One short write transaction, serialised across processes (``BEGIN IMMEDIATE``)."""
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
