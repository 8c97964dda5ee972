"""Port-level partitions of the active flows (paper §3, Alg. 1 and Alg. 2).

A partition is a maximal set of flows that share a link directly or transitively; flows in
different partitions share no link. :func:`partition_flows` computes them from scratch (Alg. 1);
:class:`IncrementalPartitioner` keeps them up to date as flows arrive, complete and are rerouted
(Alg. 2). Link ids are opaque hashables (see :mod:`wormsim.memo.fcg`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from wormsim.memo.errors import MemoError

__all__ = ["partition_flows", "IncrementalPartitioner", "PartitionUpdate"]


def partition_flows(routes: Mapping[Hashable, Sequence[Hashable]]) -> list[frozenset[Hashable]]:
    """Connected components of the flow–link bipartite graph (Alg. 1).

    Parameters
    ----------
    routes : mapping flow id -> sequence of link ids
        A flow with an empty route is a partition on its own.

    Returns
    -------
    list of frozenset
        One set of flow ids per partition, ordered by each partition's first flow in ``routes``.

    Notes
    -----
    Union-find over flows (path halving, union by size), one union per flow–link incidence:
    O((N + I) α(N)) for N flows and I incidences, i.e. the paper's O(V + E).

    Examples
    --------
    >>> parts = partition_flows({"a": [1, 2], "b": [2], "c": [3], "d": [3, 4], "e": []})
    >>> [sorted(p) for p in parts]
    [['a', 'b'], ['c', 'd'], ['e']]
    """
    parent: dict[Hashable, Hashable] = {f: f for f in routes}
    size: dict[Hashable, int] = dict.fromkeys(routes, 1)

    def find(x: Hashable) -> Hashable:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first_on_link: dict[Hashable, Hashable] = {}
    for flow, route in routes.items():
        for link in route:
            other = first_on_link.setdefault(link, flow)
            a, b = find(flow), find(other)
            if a != b:
                if size[a] < size[b]:
                    a, b = b, a
                parent[b] = a
                size[a] += size[b]
    groups: dict[Hashable, list[Hashable]] = {}
    for flow in routes:
        groups.setdefault(find(flow), []).append(flow)
    return [frozenset(members) for members in groups.values()]


@dataclass(frozen=True)
class PartitionUpdate:
    """What one partitioner event changed.

    Attributes
    ----------
    changed : tuple of int
        Partitions that exist after the event and whose flow set is new or different; each needs a
        fresh FCG (and memo lookup), and any steady state it was in ends.
    removed : tuple of int
        Partition ids that no longer exist (emptied, merged into another, or split up).
    """

    changed: tuple[int, ...]
    removed: tuple[int, ...]


class IncrementalPartitioner:
    """Partitions of the active flows, updated per event (Alg. 2).

    * **arrival** (:meth:`add`): the partitions whose link sets meet the new route are found through
      a link -> partition dict. None: a new partition; one: the flow joins it; two or more: they are
      merged into the largest one, which keeps its id (union by size; the new flow connects them,
      so no Alg. 1 re-run is needed). Cost O(len(route) + flows and links of the smaller merged
      partitions), so each flow and link is relabelled O(log N) times over any sequence of merges.
    * **completion** (:meth:`remove`): the flow leaves; with k flows left, k = 0 deletes the
      partition, k = 1 keeps it, k >= 2 re-runs Alg. 1 on the k flows because the partition may
      split (the largest piece keeps the id). Cost O(len(route)) for k <= 1, O(flows + incidences of
      the partition) otherwise.
    * **reroute** (:meth:`reroute`): a completion followed by an arrival.

    Examples
    --------
    >>> p = IncrementalPartitioner()
    >>> a, b = p.add("f1", [1, 2]), p.add("f2", [3])
    >>> u = p.add("f3", [2, 3])       # bridges the two partitions
    >>> len(p), u.removed == (b.changed[0],)
    (1, True)
    >>> p.remove("f3").changed        # ... and leaving splits them again
    (0, 2)
    >>> sorted(map(sorted, p.partitions().values()))
    [['f1'], ['f2']]
    """

    def __init__(self) -> None:
        self._route: dict[Hashable, tuple[Hashable, ...]] = {}
        self._flow_part: dict[Hashable, int] = {}
        self._flows: dict[int, set[Hashable]] = {}
        self._links: dict[int, dict[Hashable, int]] = {}  # partition -> link -> flows on it
        self._link_part: dict[Hashable, int] = {}
        self._next_id = 0

    # -- queries ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._flows)

    def __contains__(self, flow: object) -> bool:
        return flow in self._route

    def partition_of(self, flow: Hashable) -> int:
        """The id of the partition that holds ``flow``."""
        try:
            return self._flow_part[flow]
        except KeyError:
            raise MemoError(f"flow {flow!r} is not active") from None

    def flows(self, pid: int) -> frozenset[Hashable]:
        """The flows of partition ``pid``."""
        try:
            return frozenset(self._flows[pid])
        except KeyError:
            raise MemoError(f"no partition {pid}") from None

    def links(self, pid: int) -> frozenset[Hashable]:
        """The links of partition ``pid``."""
        try:
            return frozenset(self._links[pid])
        except KeyError:
            raise MemoError(f"no partition {pid}") from None

    def route(self, flow: Hashable) -> tuple[Hashable, ...]:
        """The route of an active flow (duplicates removed, order kept)."""
        try:
            return self._route[flow]
        except KeyError:
            raise MemoError(f"flow {flow!r} is not active") from None

    def partitions(self) -> dict[int, frozenset[Hashable]]:
        """All partitions: id -> flow set."""
        return {pid: frozenset(fs) for pid, fs in self._flows.items()}

    # -- events -----------------------------------------------------------------------------
    def add(self, flow: Hashable, route: Iterable[Hashable]) -> PartitionUpdate:
        """A flow arrives with ``route``; returns the partition it is now in and those merged."""
        if flow in self._route:
            raise MemoError(f"flow {flow!r} is already active; use reroute() to change its route")
        path = tuple(dict.fromkeys(route))
        touched = list(dict.fromkeys(self._link_part[x] for x in path if x in self._link_part))
        if not touched:
            pid = self._new_partition()
        else:
            pid = max(touched, key=lambda p: len(self._flows[p]) + len(self._links[p]))
            for other in touched:
                if other != pid:
                    self._absorb(pid, other)
        self._route[flow] = path
        self._attach(pid, flow, path)
        return PartitionUpdate((pid,), tuple(p for p in touched if p != pid))

    def remove(self, flow: Hashable) -> PartitionUpdate:
        """A flow completes; returns the partitions it leaves behind (none, one, or the pieces)."""
        pid = self.partition_of(flow)
        path = self._route.pop(flow)
        del self._flow_part[flow]
        members = self._flows[pid]
        members.discard(flow)
        counts = self._links[pid]
        for link in path:
            counts[link] -= 1
            if counts[link] == 0:
                del counts[link]
                del self._link_part[link]
        if not members:
            del self._flows[pid], self._links[pid]
            return PartitionUpdate((), (pid,))
        if len(members) == 1:
            return PartitionUpdate((pid,), ())
        pieces = partition_flows({f: self._route[f] for f in members})
        if len(pieces) == 1:
            return PartitionUpdate((pid,), ())
        pieces.sort(key=len, reverse=True)
        changed = [pid]
        for piece in pieces[1:]:
            new = self._new_partition()
            for f in piece:
                members.discard(f)
                self._detach_links(pid, self._route[f])
                self._attach(new, f, self._route[f])
            changed.append(new)
        return PartitionUpdate(tuple(changed), ())

    def reroute(self, flow: Hashable, route: Iterable[Hashable]) -> PartitionUpdate:
        """A flow changes route: a completion followed by an arrival."""
        existed = set(self._flows)
        before = self.remove(flow)
        after = self.add(flow, route)
        now = self._flows
        changed = {p for p in (*before.changed, *after.changed) if p in now}
        # a piece split off by the removal and merged back by the arrival never existed outside
        removed = {p for p in (*before.removed, *after.removed) if p in existed and p not in now}
        return PartitionUpdate(tuple(sorted(changed)), tuple(sorted(removed)))

    # -- internals --------------------------------------------------------------------------
    def _new_partition(self) -> int:
        pid = self._next_id
        self._next_id += 1
        self._flows[pid] = set()
        self._links[pid] = {}
        return pid

    def _attach(self, pid: int, flow: Hashable, path: tuple[Hashable, ...]) -> None:
        self._flows[pid].add(flow)
        self._flow_part[flow] = pid
        counts = self._links[pid]
        for link in path:
            counts[link] = counts.get(link, 0) + 1
            self._link_part[link] = pid

    def _detach_links(self, pid: int, path: tuple[Hashable, ...]) -> None:
        counts = self._links[pid]
        for link in path:
            counts[link] -= 1
            if counts[link] == 0:
                del counts[link]

    def _absorb(self, pid: int, other: int) -> None:
        for f in self._flows.pop(other):
            self._flows[pid].add(f)
            self._flow_part[f] = pid
        counts = self._links[pid]
        for link, n in self._links.pop(other).items():
            counts[link] = counts.get(link, 0) + n
            self._link_part[link] = pid
