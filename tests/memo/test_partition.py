import random

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wormsim.memo import IncrementalPartitioner, partition_flows


def _components(routes):
    """Reference: connected components of the flow-link bipartite graph (networkx)."""
    b = nx.Graph()
    b.add_nodes_from(("f", f) for f in routes)
    b.add_edges_from((("f", f), ("l", x)) for f, r in routes.items() for x in r)
    return {frozenset(n[1] for n in c if n[0] == "f") for c in nx.connected_components(b)}


def test_from_scratch_equals_connected_components():
    rng = random.Random(7)
    for trial in range(50):
        n_links = rng.randint(1, 40)
        routes = {
            f: rng.sample(range(n_links), rng.randint(0, min(4, n_links)))
            for f in range(rng.randint(0, 60))
        }
        parts = partition_flows(routes)
        assert set(parts) == _components(routes), trial
        assert sum(map(len, parts)) == len(routes)  # disjoint cover


def _check(p: IncrementalPartitioner, routes: dict) -> None:
    parts = p.partitions()
    assert set(parts.values()) == set(partition_flows(routes))
    for pid, flows in parts.items():
        links = {x for f in flows for x in routes[f]}
        assert p.links(pid) == links
        assert all(p.partition_of(f) == pid for f in flows)
    assert sum(map(len, parts.values())) == len(routes)


_route = st.lists(st.integers(0, 29), min_size=0, max_size=4)
_op = st.tuples(st.sampled_from(["add", "add", "remove", "reroute"]), st.integers(0, 39), _route)


@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(_op, min_size=200, max_size=300))
def test_incremental_agrees_with_from_scratch(ops):
    p = IncrementalPartitioner()
    routes: dict[int, list[int]] = {}
    seen_ids: set[int] = set()
    for kind, flow, route in ops:
        before = p.partitions()
        if kind == "add" and flow not in routes:
            upd = p.add(flow, route)
            routes[flow] = route
        elif kind == "remove" and flow in routes:
            upd = p.remove(flow)
            del routes[flow]
        elif kind == "reroute" and flow in routes:
            upd = p.reroute(flow, route)
            routes[flow] = route
        else:
            continue
        _check(p, routes)
        after = p.partitions()
        # the update names exactly the partitions that changed or vanished
        assert set(upd.removed) == set(before) - set(after)
        new_or_changed = {pid for pid, fs in after.items() if before.get(pid) != fs}
        assert new_or_changed <= set(upd.changed) <= set(after)
        assert not (set(upd.changed) - set(before)) & seen_ids  # ids are never reused
        seen_ids |= set(after)


def test_alg2_cases():
    p = IncrementalPartitioner()
    a = p.add("a", [1, 2]).changed[0]
    assert p.add("b", [2, 3]).changed == (a,)  # one partition met: join
    c = p.add("c", [7]).changed[0]
    d = p.add("d", [8]).changed[0]
    upd = p.add("e", [3, 7, 8])  # three met: merge into the largest
    assert upd.changed == (a,) and set(upd.removed) == {c, d} and len(p) == 1
    upd = p.remove("e")  # k = 4 left: re-partition, splits into 3
    assert upd.changed[0] == a and len(upd.changed) == 3 and len(p) == 3
    assert p.flows(a) == {"a", "b"}
    assert p.remove("a").changed == (a,)  # k = 1: kept
    assert p.remove("b") == type(upd)((), (a,))  # k = 0: deleted
    p.reroute("c", [8])
    assert p.partition_of("c") == p.partition_of("d") and len(p) == 1


def test_random_walk_exercises_merges_and_splits():
    rng = random.Random(2024)
    p = IncrementalPartitioner()
    routes: dict[int, list[int]] = {}
    merges = splits = deletes = 0
    for _ in range(400):
        kind, flow = rng.choice(["add", "add", "remove", "reroute"]), rng.randrange(60)
        route = rng.sample(range(80), rng.randint(1, 3))
        if kind == "add" and flow not in routes:
            upd = p.add(flow, route)
            routes[flow] = route
            merges += len(upd.removed) >= 1
        elif kind == "remove" and flow in routes:
            upd = p.remove(flow)
            del routes[flow]
            splits += len(upd.changed) >= 2
            deletes += len(upd.removed)
        elif kind == "reroute" and flow in routes:
            p.reroute(flow, route)
            routes[flow] = route
        else:
            continue
        _check(p, routes)
    assert merges > 10 and splits > 5 and deletes > 5
