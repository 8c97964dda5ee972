"""The memo store's SQLite schema: its tables, how a file is recognised, created and migrated.

A wormsim store holds three tables: ``meta`` (``schema_version``), ``namespaces`` (the params of
each namespace key, for ``wormsim memo stats``) and ``entries`` (one transient per row, unique by
its key: namespace, rate quantizer, WL hash, canonical FCG). The column layout is documented in
``docs/formats.md``. Everything here works on an open connection; deciding whether a file may be
opened at all is :mod:`wormsim.memo.connection`'s job.
"""

from __future__ import annotations

import sqlite3

from wormsim.memo.rows import ENTRY_COLS

__all__ = [
    "SCHEMA_VERSION",
    "SQLITE_HEADER",
    "inspect_tables",
    "create_schema",
    "migrate",
    "has_cc_state",
    "entry_columns",
]

SCHEMA_VERSION = 1
"""The layout this wormsim reads and writes; a store with another version is refused."""

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite file (anything else is not a store and is left alone)."""

_OUR_TABLES = frozenset({"meta", "namespaces", "entries"})

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


def inspect_tables(conn: sqlite3.Connection) -> tuple[frozenset[str], str | None]:
    """The table names of an open database and its memo schema version.

    Returns
    -------
    tables : frozenset of str
        Every table in the file (``sqlite_sequence`` included).
    version : str or None
        ``meta.schema_version``, or ``None`` when the tables are not a wormsim store's (a
        ``meta`` table of another program included).
    """
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


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the tables and record :data:`SCHEMA_VERSION`, in one write transaction.

    Called on a file :func:`inspect_tables` found holding no table; a process that created them
    meanwhile keeps its tables (``IF NOT EXISTS``, ``INSERT OR IGNORE``).
    """
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


def migrate(conn: sqlite3.Connection) -> None:
    """Add the ``cc_state`` column (an empty state for every row) to a store whose ``entries``
    table lacks it. Only writable opens migrate; read-only ones select an empty state instead
    (:func:`entry_columns`)."""
    if not has_cc_state(conn):
        conn.execute("ALTER TABLE entries ADD COLUMN cc_state TEXT NOT NULL DEFAULT '[]'")


def has_cc_state(conn: sqlite3.Connection) -> bool:
    """Whether the store's ``entries`` table has the ``cc_state`` column."""
    return any(r[1] == "cc_state" for r in conn.execute("PRAGMA table_info(entries)"))


def entry_columns(conn: sqlite3.Connection) -> str:
    """The columns :func:`~wormsim.memo.rows.decode_row` reads, on this store's table."""
    return ENTRY_COLS + (", cc_state" if has_cc_state(conn) else ", '[]'")
