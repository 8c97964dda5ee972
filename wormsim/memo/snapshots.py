"""Snapshots of the memo store: a consistent copy of the file, taken while others use it.

A sweep's Ray tasks get such a copy of the driver's store and return theirs, which the driver
merges back (:meth:`~wormsim.memo.writes.StoreWrites.merge`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from wormsim.memo.connection import StoreConnection

__all__ = ["StoreSnapshots"]


class StoreSnapshots(StoreConnection):
    """The copying operation of :class:`~wormsim.memo.store.MemoStore` (read-only stores too)."""

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
