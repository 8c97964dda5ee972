"""memo stage: the Wormhole memo store (paper §4–5). Partitions are the engine's
(:mod:`wormsim.netsim.packet.wormhole.partition`).

* :mod:`~wormsim.memo.fcg` — the Flow Conflict Graph of a partition, with rates quantized by
  :mod:`~wormsim.memo.quantize`;
* :mod:`~wormsim.memo.key` — WL bucket, canonical form, weighted isomorphism, namespaces;
* :mod:`~wormsim.memo.store` — the persistent SQLite store (:class:`MemoStore`), combining
  :mod:`~wormsim.memo.connection` (where it is, opening, errors), :mod:`~wormsim.memo.schema`
  (tables, creation, migration), :mod:`~wormsim.memo.reads`, :mod:`~wormsim.memo.writes` and
  :mod:`~wormsim.memo.snapshots`;
* :mod:`~wormsim.memo.rows` — stored rows: validation, matching, fingerprint;
* :mod:`~wormsim.memo.session` — one run's snapshot-isolated view of the store;
* :mod:`~wormsim.memo.cli` — ``wormsim memo stats | inspect | clear``.
"""

from wormsim.memo.errors import MemoError
from wormsim.memo.fcg import FlowSpec, build_fcg
from wormsim.memo.key import (
    NAMESPACE_FIELDS,
    CanonicalForm,
    canonical_form,
    find_isomorphism,
    namespace_key,
    wl_hash,
)
from wormsim.memo.quantize import (
    DEFAULT_QUANTIZER,
    LineRateQuantizer,
    LogRateQuantizer,
    RateQuantizer,
)
from wormsim.memo.records import (
    EntryInfo,
    Inserted,
    MemoEntry,
    MemoHit,
    MemoRunInfo,
    MemoStats,
    NamespaceStats,
)
from wormsim.memo.session import MemoSession
from wormsim.memo.store import ENV_VAR, MemoStore, default_store_path, resolve_store_path

__all__ = [
    "MemoError",
    "FlowSpec",
    "build_fcg",
    "RateQuantizer",
    "LogRateQuantizer",
    "LineRateQuantizer",
    "DEFAULT_QUANTIZER",
    "NAMESPACE_FIELDS",
    "CanonicalForm",
    "wl_hash",
    "canonical_form",
    "find_isomorphism",
    "namespace_key",
    "MemoStore",
    "MemoEntry",
    "MemoHit",
    "Inserted",
    "EntryInfo",
    "NamespaceStats",
    "MemoStats",
    "MemoRunInfo",
    "MemoSession",
    "ENV_VAR",
    "default_store_path",
    "resolve_store_path",
]
