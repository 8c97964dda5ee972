"""Domain exceptions of the collective stage."""

from __future__ import annotations

__all__ = ["CollectiveError"]


class CollectiveError(ValueError):
    """The ops table, the layout or the ``collective:`` config cannot be expanded into flows.

    Messages name the offending field (or op / ``coll_id``) and how to fix it.
    """
