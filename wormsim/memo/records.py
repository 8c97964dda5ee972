"""The records the memo store takes and returns (values, hits, listings, totals)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "MemoEntry",
    "MemoHit",
    "Inserted",
    "EntryInfo",
    "NamespaceStats",
    "MemoStats",
    "MemoRunInfo",
]


@dataclass(frozen=True)
class MemoEntry:
    """The value of a memo entry, keyed by the flow ids of the FCG it is inserted with.

    Attributes
    ----------
    end_rates_bps : mapping flow id -> float
        Steady rate each flow settles at (``FCG_end``'s vertex weights, unquantized), bits/s.
    sent_bytes : mapping flow id -> int
        Bytes each flow sent during the transient (``Size_f``).
    t_conv_ps : int
        Duration of the transient (``T_conv``), picoseconds.
    cc_state : mapping flow id -> tuple of float, optional
        Congestion-control state each flow ends the transient with, beyond its rate (DCQCN:
        alpha, target rate in bits/s, rate-increase stage); empty when the CC needs none.
    """

    end_rates_bps: Mapping[Hashable, float]
    sent_bytes: Mapping[Hashable, int]
    t_conv_ps: int
    cc_state: Mapping[Hashable, tuple[float, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoHit:
    """A stored transient, mapped onto the flows of the partition that was looked up.

    Attributes
    ----------
    entry_id : int
        Row id in the store.
    mapping : dict
        New flow id -> stored canonical vertex (``0..n-1``).
    end_rates_bps, sent_bytes : dict
        The stored per-vertex values, keyed by the *new* flow ids.
    t_conv_ps : int
        Transient duration.
    hits : int
        Hit count including this one (when counted).
    created_s : float
        Unix time the entry was stored.
    version : str
        wormsim version that stored it.
    cc_state : dict
        The stored congestion-control state per vertex, keyed by the *new* flow ids (empty if
        the entry has none).
    """

    entry_id: int
    mapping: dict[Hashable, int]
    end_rates_bps: dict[Hashable, float]
    sent_bytes: dict[Hashable, int]
    t_conv_ps: int
    hits: int
    created_s: float
    version: str
    cc_state: dict[Hashable, tuple[float, ...]] = field(default_factory=dict)


class Inserted(NamedTuple):
    """Result of :meth:`MemoStore.insert`: the entry's id and whether this call created it."""

    entry_id: int
    created: bool


@dataclass(frozen=True)
class EntryInfo:
    """One stored entry as :meth:`MemoStore.entries` lists it (values in canonical order)."""

    entry_id: int
    namespace: str
    quantizer: str
    wl_hash: str
    n_flows: int
    n_edges: int
    weights: tuple[int, ...]
    edges: tuple[tuple[int, int, int], ...]
    end_rates_bps: tuple[float, ...]
    sent_bytes: tuple[int, ...]
    t_conv_ps: int
    created_s: float
    version: str
    hits: int
    last_hit_s: float | None


@dataclass(frozen=True)
class NamespaceStats:
    """Per-namespace totals; ``params`` is ``None`` when the namespace was given as a bare key."""

    namespace: str
    entries: int
    hits: int
    max_flows: int
    params: dict[str, Any] | None


@dataclass(frozen=True)
class MemoStats:
    """Store totals (:meth:`MemoStore.stats`)."""

    path: Path
    size_bytes: int
    schema_version: int
    entries: int
    hits: int
    namespaces: tuple[NamespaceStats, ...]


@dataclass(frozen=True)
class MemoRunInfo:
    """The memo store state a run started from (:class:`~wormsim.memo.session.MemoSession`).

    Attributes
    ----------
    path : Path
        The store file.
    mode : {"readwrite", "read"}
        Whether the run also wrote to it.
    fingerprint : str
        Identifies the entries the run could see at its start; same inputs and same fingerprint
        give identical outputs.
    snapshot_entries, corrupt_entries : int
        Entries of the run's namespace in that snapshot, and those skipped as unreadable.
    """

    path: Path
    mode: str
    fingerprint: str
    snapshot_entries: int
    corrupt_entries: int

    def summary(self) -> dict[str, str | int]:
        """The fields a run's ``summary.json`` records."""
        return {
            "memo_store": str(self.path),
            "memo_mode": self.mode,
            "memo_fingerprint": self.fingerprint,
        }
