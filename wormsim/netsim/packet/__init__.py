"""Packet-level engine: numba kernels over structure-of-arrays state."""

from __future__ import annotations

import hashlib
from pathlib import Path


def _guard_numba_cache() -> None:
    """Drop this package's numba cache when any of its sources changed.

    numba invalidates a cached function only when *its own* file changes, yet a cached kernel
    embeds the code of the functions it calls from the other modules here (``heap_push`` inside
    ``transmit`` inside ``switch_receive`` ...). Editing ``heap.py`` alone would leave stale copies
    in the other modules' cache entries and mix two heap layouts in one run. A digest of all the
    sources, kept next to the cache, clears every entry of the package at once instead.
    """
    here = Path(__file__).parent
    h = hashlib.sha256()
    for f in sorted(here.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    digest = h.hexdigest()
    cache = here / "__pycache__"
    stamp = cache / "numba_sources.sha256"
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass
    try:
        for p in [*cache.glob("*.nbi"), *cache.glob("*.nbc")]:
            p.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # read-only install: numba then compiles in memory or uses its cache dir
        pass


_guard_numba_cache()
