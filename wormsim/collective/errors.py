"""Domain exceptions of the collective stage."""

from __future__ import annotations

from wormsim.errors import WormsimError

__all__ = ["CollectiveError"]


class CollectiveError(WormsimError):
    """The ops table, the layout or the ``collective:`` config cannot be expanded into flows.

    Messages name the offending field (or op / ``coll_id``) and how to fix it.
    """
