"""The persistent memo store: one SQLite file shared by runs and processes (paper §4.3, §5).

A row holds one transient: the key (namespace, rate quantizer, WL hash, canonical FCG
serialisation) and the value (paper §5: ``FCG_end``'s per-vertex steady rates, the bytes each flow
sent during the transient ``Size_f``, and its duration ``T_conv``), plus metadata (creation time,
wormsim version, hit count). Per-flow values are stored in canonical vertex order
(:func:`wormsim.memo.key.canonical_form`) and handed back through the isomorphism mapping.

:class:`MemoStore` is the one class callers use; each concept it combines has its own module:

* :mod:`~wormsim.memo.connection` — where the store is (:func:`resolve_store_path`), opening a
  file without ever modifying a foreign one, read-only use, connections, errors, pickling;
* :mod:`~wormsim.memo.schema` — the tables, the schema version, creation and migration;
* :mod:`~wormsim.memo.reads` — lookup, listing (:meth:`~MemoStore.entries`,
  :meth:`~MemoStore.namespace_rows`) and totals (:meth:`~MemoStore.stats`);
* :mod:`~wormsim.memo.writes` — insert (first writer wins), hit counts, merge, clear, and the
  concurrency rules;
* :mod:`~wormsim.memo.snapshots` — a consistent copy of the file.

Runs read the store through a :class:`~wormsim.memo.session.MemoSession`, which isolates them
from each other's writes.
"""

from __future__ import annotations

from wormsim.memo.connection import ENV_VAR, default_store_path, resolve_store_path
from wormsim.memo.key import namespace_id
from wormsim.memo.reads import StoreReads
from wormsim.memo.schema import SCHEMA_VERSION
from wormsim.memo.snapshots import StoreSnapshots
from wormsim.memo.writes import StoreWrites

__all__ = [
    "SCHEMA_VERSION",
    "ENV_VAR",
    "default_store_path",
    "resolve_store_path",
    "namespace_id",
    "MemoStore",
]


class MemoStore(StoreReads, StoreWrites, StoreSnapshots):
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
    >>> from wormsim.memo.records import MemoEntry
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
