import multiprocessing as mp
import pickle
import sqlite3

import networkx as nx
import pytest

from tests.memo._graphs import (
    B100,
    fcg_of,
    namespace,
    partition_specs,
    permuted,
    random_specs,
    rate,
)
from tests.memo._workers import die_mid_insert, entry_for, insert_many
from wormsim.memo import (
    MemoEntry,
    MemoError,
    MemoStore,
    build_fcg,
    canonical_form,
    find_isomorphism,
    namespace_key,
)
from wormsim.memo.store import default_store_path

NS = namespace()
KEY = namespace_key(NS)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "memo.sqlite"


def test_insert_then_lookup_from_another_instance(path):
    specs = random_specs(11)
    a = MemoStore(path)
    ins = a.insert(build_fcg(specs), NS, entry_for(specs))
    assert ins.created and a.insert(build_fcg(specs), NS, entry_for(specs, 2)) == (
        ins.entry_id,
        False,
    )
    b = MemoStore(path)
    new_specs, fmap = permuted(specs, 5)
    hit = b.lookup(build_fcg(new_specs), KEY)
    assert hit is not None and hit.entry_id == ins.entry_id and hit.t_conv_ps == 7_000_000
    g = build_fcg(new_specs)
    stored = entry_for(specs)  # first writer wins: scale 1, not 2
    for old, new in fmap.items():
        v = hit.mapping[new]
        assert g.nodes[new]["weight"] == build_fcg(specs).nodes[old]["weight"]
        # the stored vertex of this role holds a flow of the same weight and neighbourhood
        assert hit.sent_bytes[new] in {stored.sent_bytes[o] for o in specs_by_role(specs, old)}
        assert hit.end_rates_bps[new] == pytest.approx(hit.sent_bytes[new] * 1e6)
        assert isinstance(v, int)
    assert sum(hit.sent_bytes.values()) == sum(stored.sent_bytes.values())


def specs_by_role(specs, old):
    """Flows that an automorphism can exchange with ``old`` (same orbit)."""
    g = build_fcg(specs)
    gm = nx.algorithms.isomorphism.GraphMatcher(
        g,
        g,
        node_match=lambda a, b: a["weight"] == b["weight"],
        edge_match=lambda a, b: a["weight"] == b["weight"],
    )
    return {m[old] for m in gm.isomorphisms_iter()}


def test_role_values_follow_the_mapping(path):
    # asymmetric: a heavy pair a-b, then c, then d at a lower rate
    g = nx.Graph()
    g.add_edge("a", "b", weight=2)
    g.add_edge("b", "c", weight=1)
    g.add_edge("c", "d", weight=1)
    fcg = fcg_of(g, {"a": 100e9, "b": 100e9, "c": 100e9, "d": 50e9})
    store = MemoStore(path)
    sent = {"a": 10, "b": 20, "c": 30, "d": 40}
    store.insert(fcg, NS, MemoEntry({f: 1e9 * v for f, v in sent.items()}, sent, 5))
    relabel = {"a": "w", "b": "x", "c": "y", "d": "z"}
    hit = store.lookup(nx.relabel_nodes(fcg, relabel), NS)
    assert hit.sent_bytes == {relabel[f]: v for f, v in sent.items()}
    assert hit.end_rates_bps["z"] == 40e9


def test_symmetric_partition_hits_through_vf2(path):
    store = MemoStore(path)
    specs = partition_specs(13)  # C8: permuted copies serialise differently
    g = build_fcg(specs)
    store.insert(g, NS, entry_for(specs))
    for seed in range(5):
        new_specs, _ = permuted(specs, seed)
        h = build_fcg(new_specs)
        hit = store.lookup(h, NS)
        assert hit is not None and hit.entry_id == 1
        stored_edges = {frozenset(e[:2]) for e in store.entries()[0].edges}
        assert {frozenset((hit.mapping[u], hit.mapping[v])) for u, v in h.edges} == stored_edges
    assert any(
        canonical_form(build_fcg(permuted(specs, s)[0])).text != canonical_form(g).text
        for s in range(5)
    )


def test_misses(path):
    store = MemoStore(path)
    k33 = fcg_of(nx.complete_bipartite_graph(3, 3))
    store.insert(k33, NS, MemoEntry(dict.fromkeys(k33, 1.0), dict.fromkeys(k33, 1), 1))
    assert store.lookup(fcg_of(nx.circular_ladder_graph(3)), NS) is None  # same WL bucket
    assert store.lookup(fcg_of(nx.complete_bipartite_graph(3, 3)), NS) is not None
    up = {0: rate(B100 + 2)}  # one flow two 5 % buckets faster
    assert store.lookup(fcg_of(nx.complete_bipartite_graph(3, 3), up), NS) is None
    assert store.lookup(k33, namespace(cc="dcqcn")) is None
    assert store.lookup(k33, namespace(mtu_bytes=4096)) is None
    assert store.lookup(k33, namespace_key(NS)) is not None


def test_entry_validation(path):
    store = MemoStore(path)
    g = fcg_of(nx.path_graph(2))
    with pytest.raises(MemoError, match="missing"):
        store.insert(g, NS, MemoEntry({0: 1.0}, {0: 1, 1: 1}, 1))
    with pytest.raises(MemoError, match="integer"):
        store.insert(g, NS, MemoEntry({0: 1.0, 1: 1.0}, {0: 1.5, 1: 1}, 1))
    with pytest.raises(MemoError, match=">= 0"):
        store.insert(g, NS, MemoEntry({0: 1.0, 1: 1.0}, {0: 1, 1: 1}, -1))
    with pytest.raises(MemoError, match="namespace"):
        store.insert(g, "hpcc", MemoEntry({0: 1.0, 1: 1.0}, {0: 1, 1: 1}, 1))
    with pytest.raises(MemoError, match="quantizer"):
        store.lookup(nx.path_graph(2), NS)
    assert store.stats().entries == 0


def test_hits_clear_stats_entries(path):
    store = MemoStore(path)
    specs = random_specs(3)
    g = build_fcg(specs)
    store.insert(g, NS, entry_for(specs))
    other = namespace(cc="timely")
    store.insert(g, other, entry_for(specs))
    p3 = fcg_of(nx.path_graph(3))
    store.insert(
        p3, namespace_key(other), MemoEntry(dict.fromkeys(p3, 1.0), dict.fromkeys(p3, 1), 1)
    )
    assert [store.lookup(g, NS).hits for _ in range(3)] == [1, 2, 3]
    assert store.lookup(g, NS, count_hit=False).hits == 3
    s = store.stats()
    assert (s.entries, s.hits, len(s.namespaces)) == (3, 3, 2) and s.size_bytes > 0
    by_ns = {n.namespace: n for n in s.namespaces}
    assert by_ns[KEY].params["cc"] == "hpcc" and by_ns[KEY].hits == 3
    top = store.entries(limit=1)
    assert len(top) == 1 and top[0].hits == 3 and top[0].n_flows == len(specs)
    assert len(store.entries(limit=0)) == 3 and len(store.entries(namespace=KEY[:8])) == 1
    assert store.clear(namespace_key(other)) == 2
    assert store.stats().entries == 1 and store.lookup(g, other) is None
    assert store.clear() == 1 and store.stats().entries == 0 and store.lookup(g, NS) is None


def test_concurrent_writers(path):
    ctx = mp.get_context("spawn")
    n_workers, seeds = 3, list(range(16))
    barrier, results = ctx.Barrier(n_workers), ctx.Queue()
    MemoStore(path)  # create the schema first
    procs = [
        ctx.Process(target=insert_many, args=(str(path), w, seeds, barrier, results))
        for w in range(n_workers)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [err for _, _, err in got] == [None] * n_workers
    graphs = [build_fcg(partition_specs(s)) for s in seeds]
    assert all(find_isomorphism(a, b) is None for i, a in enumerate(graphs) for b in graphs[:i])
    assert sum(created for _, created, _ in got) == 2 * len(seeds)
    store = MemoStore(path)
    assert store.stats().entries == 2 * len(seeds)
    assert store.stats().hits == n_workers * 2 * len(seeds)
    for s in seeds:
        specs = partition_specs(s)
        hit = store.lookup(build_fcg(specs), NS)
        assert hit is not None
        assert sorted(hit.sent_bytes.values()) == sorted(entry_for(specs).sent_bytes.values())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_killed_mid_transaction(path):
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=die_mid_insert, args=(str(path),))
    p.start()
    p.join(timeout=60)
    assert p.exitcode == 7
    store = MemoStore(path, create=False, timeout_s=5)
    assert store.stats().entries == 1
    assert store.lookup(build_fcg(random_specs(1)), NS) is not None
    second = random_specs(2, n_flows=5)
    assert store.lookup(build_fcg(second), NS) is None
    assert store.insert(build_fcg(second), NS, entry_for(second)).created  # lock was released
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_bad_store_files(tmp_path):
    with pytest.raises(MemoError, match="not found"):
        MemoStore(tmp_path / "missing.sqlite", create=False)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(MemoError, match="not a wormsim memo store"):
        MemoStore(junk)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(MemoError, match="not a wormsim memo store"):
        MemoStore(foreign)
    old = tmp_path / "old.sqlite"
    MemoStore(old).close()
    with sqlite3.connect(old) as conn:
        conn.execute("UPDATE meta SET value='0' WHERE key='schema_version'")
    with pytest.raises(MemoError, match="schema version 0"):
        MemoStore(old)
    with pytest.raises(MemoError, match="directory"):
        MemoStore(tmp_path)


def test_pickles_as_path_and_default_location(path, monkeypatch, tmp_path):
    store = MemoStore(path)
    specs = random_specs(4)
    store.insert(build_fcg(specs), NS, entry_for(specs))
    clone = pickle.loads(pickle.dumps(store))
    assert clone.path == path and clone.lookup(build_fcg(specs), NS) is not None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_store_path() == tmp_path / "cache" / "wormsim" / "memo.sqlite"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_store_path().parts[-3:] == (".cache", "wormsim", "memo.sqlite")
