"""One run's view of the memo store: snapshot isolation, own entries, and a fingerprint.

Consistency rule
----------------
A run sees **the entries of its namespace that were in the store when it started, plus the
entries it learned itself**, and nothing else. At open, :class:`MemoSession` reads every row of
the namespace once (one read transaction, so one consistent state) into memory; lookups match
against those rows and then against the run's own entries, oldest first, exactly as a run alone
on that store would. Entries other processes add meanwhile are never seen (they are there for
the next run), and writes to the shared store never change what this run reads: an insert is
kept in the run's own entries with the run's own values even when a concurrent run stored an
isomorphic entry first (which keeps its value in the file: first writer wins). Hit counts are
statistics only — they are never read by a lookup — and are added to the store when the session
closes. A row that does not decode is skipped (a miss) and counted in :attr:`corrupt_entries`.

So a run's output depends only on its inputs and on the snapshot, which :attr:`fingerprint`
identifies: 16 hex digits of SHA-256 over the id, rate quantizer, WL hash, sizes, canonical FCG
and values (end rates, ``Size_f``, ``T_conv``) of each snapshot row of the run's namespace, in id
order (not over hit counts, timestamps or other namespaces). Two runs with the same inputs and
the same fingerprint give identical outputs, whatever else runs on the store meanwhile, and in
either mode:

* ``readwrite`` — lookups, and inserts that also go to the shared store;
* ``read`` — lookups only: the store is opened read-only and never written (no hit counts, no
  journal mode change), so it may be a read-only file or directory; the run still learns and
  uses its own entries in memory, so its outputs equal a ``readwrite`` run's.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

import networkx as nx

from wormsim.memo.errors import MemoError
from wormsim.memo.fcg import fcg_quantizer_spec
from wormsim.memo.key import CanonicalForm, canonical_form, namespace_id
from wormsim.memo.records import Inserted, MemoEntry, MemoHit, MemoRunInfo
from wormsim.memo.rows import (
    GraphCache,
    StoredRow,
    decode_row,
    fingerprint_rows,
    hit_from_row,
    match_rows,
)
from wormsim.memo.store import MemoStore

__all__ = ["MemoSession"]


class MemoSession:
    """A run's snapshot-isolated view of a :class:`~wormsim.memo.store.MemoStore`.

    Parameters
    ----------
    store : MemoStore
        The shared store (open it with ``readonly=True`` for mode ``read``).
    namespace : str or mapping
        The run's namespace (params dict, or its key).
    write : bool
        Also insert learned entries into the store and add hit counts at :meth:`close`
        (mode ``readwrite``); forced off on a read-only store.

    Attributes
    ----------
    fingerprint : str
        Identifies the snapshot (see the module docstring).
    snapshot_entries, corrupt_entries : int
        Rows of the namespace in the snapshot, and those skipped as undecodable.
    stored : int
        Rows this session added to the shared store (fewer than its own entries when concurrent
        runs stored the same patterns first; depends on scheduling, unlike every other figure).
    """

    def __init__(
        self, store: MemoStore, namespace: str | Mapping[str, Any], *, write: bool = True
    ) -> None:
        self.store = store
        self.write = bool(write) and not store.readonly
        self.namespace, _ = namespace_id(namespace)
        self._namespace_arg = namespace
        raw = store.namespace_rows(self.namespace)
        self.fingerprint = fingerprint_rows(raw)
        self.snapshot_entries = len(raw)
        rows = [decode_row(r) for r in raw]
        self.corrupt_entries = sum(row is None for row in rows)
        self._buckets: defaultdict[tuple[str, str, int, int], list[StoredRow]] = defaultdict(list)
        for row in rows:
            if row is not None:
                self._buckets[row.bucket].append(row)
        self._graphs = GraphCache()
        self._hits: Counter[int] = Counter()
        self._next_local_id = -1
        self.stored = 0

    @property
    def mode(self) -> str:
        """``"readwrite"`` or ``"read"``."""
        return "readwrite" if self.write else "read"

    def info(self) -> MemoRunInfo:
        """Where the run's memo entries came from, for ``summary.json``."""
        return MemoRunInfo(
            self.store.path,
            self.mode,
            self.fingerprint,
            self.snapshot_entries,
            self.corrupt_entries,
        )

    @staticmethod
    def bucket(fcg: nx.Graph, cf: CanonicalForm | None = None) -> tuple[str, str, int, int]:
        """The bucket :meth:`lookup` searches for ``fcg`` (quantizer, WL hash, vertex and edge
        counts): only an entry inserted into this bucket can turn a miss of ``fcg`` into a hit."""
        cf = canonical_form(fcg) if cf is None else cf
        return fcg_quantizer_spec(fcg), cf.wl_hash, cf.n_flows, cf.n_edges

    def holds(self, bucket: tuple[str, str, int, int]) -> bool:
        """Whether any visible entry is in ``bucket`` (see :meth:`bucket`): a lookup of an FCG
        whose bucket holds none misses, so the caller need not build its canonical form."""
        return bool(self._buckets.get(bucket))

    def lookup(self, fcg: nx.Graph, cf: CanonicalForm | None = None) -> MemoHit | None:
        """The first visible entry isomorphic to ``fcg`` (snapshot first, then own entries);
        ``cf`` is ``fcg``'s canonical form if the caller has it."""
        cf = canonical_form(fcg) if cf is None else cf
        bucket = self.bucket(fcg, cf)
        found = match_rows(self._buckets.get(bucket, ()), fcg, cf, self._graphs)
        if found is None:
            return None
        row, mapping = found
        self.add_hits({row.entry_id: 1})
        return hit_from_row(row, mapping, row.hits + self._hits[row.entry_id])

    def insert(self, fcg: nx.Graph, entry: MemoEntry, cf: CanonicalForm | None = None) -> Inserted:
        """Learn ``entry`` for ``fcg`` unless a visible entry is isomorphic to it (``cf``:
        ``fcg``'s canonical form if the caller has it).

        Returns the entry's id (negative for one kept only in memory) and whether it is new to
        this run.
        """
        cf = canonical_form(fcg) if cf is None else cf
        bucket = self.bucket(fcg, cf)
        found = match_rows(self._buckets.get(bucket, ()), fcg, cf, self._graphs)
        if found is not None:
            return Inserted(found[0].entry_id, False)
        rates, sent, t_conv, cc = MemoStore.entry_values(cf.order, entry)
        if self.write:
            shared = self.store.insert_form(fcg, cf, self._namespace_arg, entry)
            entry_id = shared.entry_id
            self.stored += shared.created
        else:
            entry_id, self._next_local_id = self._next_local_id, self._next_local_id - 1
        own = StoredRow(
            entry_id, bucket[0], cf.wl_hash, cf.n_flows, cf.n_edges, cf.text,
            tuple(rates), tuple(sent), t_conv, float("nan"), "", 0,
            tuple(tuple(v) for v in cc),
        )  # fmt: skip
        self._buckets[bucket].append(own)
        return Inserted(entry_id, True)

    def add_hits(self, counts: Mapping[int, int]) -> None:
        """Count hits (served by the caller's cache or by :meth:`lookup`) for :meth:`close`."""
        for entry_id, n in counts.items():
            if entry_id >= 0 and n > 0:
                self._hits[entry_id] += n

    def close(self) -> None:
        """Add the hit counts to the store (``readwrite``; best effort if it stays locked)."""
        if self.write and self._hits:
            try:
                self.store.add_hits(self._hits)
            except (MemoError, OSError):  # locked, or a full disk: the counts are a hint
                return
        self._hits.clear()
