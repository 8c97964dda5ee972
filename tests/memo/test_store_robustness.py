"""The memo store against files it must not touch, corrupt rows, read-only use, where the store
is, and a run's snapshot (wormsim.memo.store, wormsim.memo.session, ``wormsim memo``)."""

from __future__ import annotations

import json
import os
import sqlite3

import networkx as nx
import pytest
from typer.testing import CliRunner

from tests.memo._graphs import fcg_of, namespace, random_specs
from tests.memo._workers import entry_for
from wormsim.cli import app
from wormsim.memo import (
    MemoEntry,
    MemoError,
    MemoSession,
    MemoStore,
    build_fcg,
    default_store_path,
    namespace_key,
    resolve_store_path,
)
from wormsim.memo.rows import EMPTY_FINGERPRINT

NS = namespace()
KEY = namespace_key(NS)


def _files(path):
    """Every file beside ``path`` with its bytes (so -wal/-shm files show up too)."""
    return {p.name: p.read_bytes() for p in path.parent.iterdir()}


def _foreign_with_meta(path):
    with sqlite3.connect(path) as conn:  # many programs have a 'meta' table
        conn.execute("CREATE TABLE meta (k TEXT, v TEXT)")
        conn.execute("INSERT INTO meta VALUES ('owner', 'someone else')")
    conn.close()


def _foreign_plain(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()


def _random_bytes(path):
    path.write_bytes(os.urandom(8192))


def _store_with(path, n: int = 3) -> list:
    """A closed store holding ``n`` entries; returns their partitions."""
    specs = [random_specs(100 + i) for i in range(n)]
    with MemoStore(path) as store:
        for s in specs:
            store.insert(build_fcg(s), NS, entry_for(s))
    return specs


FOREIGN = [_foreign_with_meta, _foreign_plain, _random_bytes]


@pytest.mark.parametrize("make", FOREIGN)
@pytest.mark.parametrize("readonly", [False, True])
def test_a_foreign_file_is_refused_and_left_untouched(tmp_path, make, readonly):
    path = tmp_path / "other.db"
    make(path)
    before = _files(path)
    with pytest.raises(MemoError, match="not a wormsim memo store") as exc:
        MemoStore(path, readonly=readonly)
    assert str(path) in str(exc.value) and "another file" in str(exc.value)
    assert _files(path) == before


@pytest.mark.parametrize("make", FOREIGN)
@pytest.mark.parametrize("cmd", [["clear", "--yes"], ["stats"], ["inspect"]])
def test_memo_commands_refuse_a_foreign_file_cleanly(tmp_path, make, cmd):
    path = tmp_path / "other.db"
    make(path)
    before = _files(path)
    r = CliRunner().invoke(app, ["memo", *cmd, "--store", str(path)], env={"COLUMNS": "300"})
    assert r.exit_code == 2
    assert r.stderr.startswith("error: ") and str(path) in r.stderr
    assert "Traceback" not in r.output and r.stderr.count("\n") == 1
    assert _files(path) == before


def test_a_truncated_store_is_a_clear_error(tmp_path):
    path = tmp_path / "memo.sqlite"
    _store_with(path, 300)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(MemoError, match="corrupted") as exc:
        MemoSession(MemoStore(path, readonly=True), KEY)
    assert str(path) in str(exc.value) and "delete" in str(exc.value)
    r = CliRunner().invoke(app, ["memo", "stats", "--store", str(path)])
    assert r.exit_code == 2 and "Traceback" not in r.output and str(path) in r.stderr


@pytest.mark.parametrize(
    ("column", "garbage"),
    [
        ("sent_bytes", "'not json'"),
        ("end_rates_bps", "'[1.0]'"),  # wrong length
        ("canon", '\'{"w": [1], "e": [[0, 5, 1]]}\''),  # edge to a missing vertex
        ("t_conv_ps", "-1"),
        ("n_edges", "'two'"),
    ],
)
def test_corrupt_rows_are_skipped_listed_and_replaced(tmp_path, column, garbage):
    path = tmp_path / "memo.sqlite"
    specs = _store_with(path)
    with sqlite3.connect(path) as conn:
        bad = conn.execute("SELECT MIN(id) FROM entries").fetchone()[0]
        conn.execute(f"UPDATE entries SET {column} = {garbage} WHERE id = ?", (bad,))
    conn.close()
    store = MemoStore(path)
    assert store.lookup(build_fcg(specs[0]), NS) is None  # a miss, not a crash
    assert store.lookup(build_fcg(specs[1]), NS) is not None
    assert {e.entry_id for e in store.entries(limit=0)} == {bad + 1, bad + 2}
    assert store.corrupt_ids == {bad}
    session = MemoSession(store, NS)
    assert (session.snapshot_entries, session.corrupt_entries) == (3, 1)
    assert session.lookup(build_fcg(specs[0])) is None
    # storing the pattern again replaces a corrupt row that holds its key
    assert store.insert(build_fcg(specs[0]), NS, entry_for(specs[0])).created
    assert MemoStore(path).lookup(build_fcg(specs[0]), NS) is not None
    r = CliRunner().invoke(app, ["memo", "inspect", "--store", str(path)])
    assert r.exit_code == 0 and "Traceback" not in r.output


def test_a_read_only_store_is_never_written(tmp_path):
    path = tmp_path / "memo.sqlite"
    specs = _store_with(path)
    before = _files(path)
    store = MemoStore(path, readonly=True)
    hit = store.lookup(build_fcg(specs[0]), NS)
    assert hit is not None and hit.hits == 0
    g = fcg_of(nx.path_graph(2))
    with pytest.raises(MemoError, match="read-only"):
        store.insert(g, NS, MemoEntry(dict.fromkeys(g, 1.0), dict.fromkeys(g, 1), 1))
    session = MemoSession(store, NS, write=True)  # a read-only store forces mode read
    assert session.mode == "read"
    assert session.insert(g, MemoEntry(dict.fromkeys(g, 1.0), dict.fromkeys(g, 1), 1)).created
    assert session.lookup(g) is not None and session.lookup(build_fcg(specs[1])) is not None
    session.close()
    assert store.stats().entries == 3 and len(store.entries()) == 3
    assert _files(path) == before
    with pytest.raises(MemoError, match="not found"):
        MemoStore(tmp_path / "missing.sqlite", readonly=True)
    assert not (tmp_path / "missing.sqlite").exists()


def test_store_path_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("WORMSIM_MEMO_STORE", raising=False)
    assert default_store_path() == tmp_path / "xdg" / "wormsim" / "memo.sqlite"
    monkeypatch.setenv("WORMSIM_MEMO_STORE", "")  # empty: unset
    assert default_store_path() == tmp_path / "xdg" / "wormsim" / "memo.sqlite"
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(tmp_path / "env.sqlite"))
    assert default_store_path() == tmp_path / "env.sqlite"
    assert resolve_store_path(None) == tmp_path / "env.sqlite"
    assert resolve_store_path(tmp_path / "mine.sqlite") == tmp_path / "mine.sqlite"
    assert MemoStore().path == tmp_path / "env.sqlite" and (tmp_path / "env.sqlite").exists()


def test_a_session_sees_its_snapshot_and_its_own_entries_only(tmp_path):
    path = tmp_path / "memo.sqlite"
    old = _store_with(path, 1)[0]
    session = MemoSession(MemoStore(path), NS)
    other = MemoStore(path)
    late = random_specs(7)
    other.insert(build_fcg(late), NS, entry_for(late))  # after the session started
    assert session.lookup(build_fcg(old)) is not None
    assert session.lookup(build_fcg(late)) is None
    # the session learns the pattern with its own value; the store keeps the first writer's
    ins = session.insert(build_fcg(late), entry_for(late, scale=3))
    assert ins.created and session.stored == 0
    mine = session.lookup(build_fcg(late))
    theirs = other.lookup(build_fcg(late), NS)
    assert sorted(mine.sent_bytes.values()) == [3 * v for v in sorted(theirs.sent_bytes.values())]
    new = random_specs(8)
    assert session.insert(build_fcg(new), entry_for(new)).created and session.stored == 1
    assert other.lookup(build_fcg(new), NS) is not None  # shared for later runs
    assert MemoSession(MemoStore(path), NS).snapshot_entries == 3


def test_the_fingerprint_covers_the_namespace_entries_not_hits(tmp_path):
    path = tmp_path / "memo.sqlite"
    store = MemoStore(path)
    assert MemoSession(store, NS).fingerprint == EMPTY_FINGERPRINT
    specs = _store_with(path, 2)
    fp = MemoSession(store, NS).fingerprint
    assert fp != EMPTY_FINGERPRINT and MemoSession(store, KEY).fingerprint == fp
    store.lookup(build_fcg(specs[0]), NS)
    store.add_hits({1: 5})
    assert MemoSession(store, NS).fingerprint == fp  # hit counts are not the state
    g = fcg_of(nx.path_graph(3))
    other = namespace(cc="dcqcn")
    store.insert(g, other, MemoEntry(dict.fromkeys(g, 1.0), dict.fromkeys(g, 1), 1))
    assert MemoSession(store, NS).fingerprint == fp  # nor other namespaces' entries
    store.insert(g, NS, MemoEntry(dict.fromkeys(g, 1.0), dict.fromkeys(g, 1), 1))
    assert MemoSession(store, NS).fingerprint != fp


@pytest.mark.parametrize("cmd", [[], ["stats"], ["inspect"], ["clear"]])
def test_memo_help_shows_the_resolved_store(tmp_path, cmd):
    env_path = tmp_path / "env-store.sqlite"
    r = CliRunner().invoke(
        app,
        ["memo", *cmd, "--help"],
        env={"COLUMNS": "400", "WORMSIM_MEMO_STORE": str(env_path)},
    )
    assert r.exit_code == 0, r.output
    assert str(env_path) in r.stdout
    assert not env_path.exists()


def test_memo_stats_json_and_env_var(tmp_path):
    path = tmp_path / "memo.sqlite"
    _store_with(path, 2)
    before = _files(path)
    r = CliRunner().invoke(app, ["memo", "stats", "--json"], env={"WORMSIM_MEMO_STORE": str(path)})
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["path"] == str(path) and data["entries"] == 2
    assert data["namespaces"][0]["namespace"] == KEY and data["namespaces"][0]["params"] == NS
    assert _files(path) == before  # stats only reads


def test_cc_state_round_trips_flow_by_flow(tmp_path):
    specs = random_specs(7)
    g = build_fcg(specs)
    base = entry_for(specs)
    state = {s.flow_id: (0.1 * (i + 1), 1e9 * (i + 2), float(i)) for i, s in enumerate(specs)}
    with MemoStore(tmp_path / "m.sqlite") as store:
        store.insert(g, NS, MemoEntry(base.end_rates_bps, base.sent_bytes, 1, cc_state=state))
        hit = store.lookup(build_fcg(specs), NS)
    assert hit is not None and hit.cc_state == state


def test_a_store_from_before_cc_state_is_read_untouched_and_upgraded_on_write(tmp_path):
    path = tmp_path / "old.sqlite"
    specs = _store_with(path)
    with sqlite3.connect(path) as conn:  # the table as stores made before the column had it
        conn.execute("ALTER TABLE entries DROP COLUMN cc_state")
    conn.close()
    before = _files(path)
    hit = MemoStore(path, readonly=True).lookup(build_fcg(specs[0]), NS)
    assert hit is not None and hit.cc_state == {}
    assert _files(path) == before  # read-only: no migration
    with MemoStore(path) as store:  # opened for writing: the column is added, entries kept
        assert store.lookup(build_fcg(specs[1]), NS) is not None
        assert store.stats().entries == 3
    with sqlite3.connect(path) as conn:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(entries)")]
    conn.close()
    assert "cc_state" in cols


def test_a_full_disk_under_the_store_is_the_disk_full_error(tmp_path):
    """SQLite's SQLITE_FULL (here from a page limit, as a full disk gives it) is the OSError
    ENOSPC, so the CLI prints its one disk-full message (exit 2) like every other writer."""
    import errno

    path = tmp_path / "memo.sqlite"
    _store_with(path, 1)
    with MemoStore(path) as store:
        conn = store._connection()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(OSError) as caught:
            for i in range(200):
                s = random_specs(500 + i)
                store.insert(build_fcg(s), NS, entry_for(s))
    assert caught.value.errno == errno.ENOSPC and str(path) in str(caught.value)


def _open_fresh_store(path: str, barrier, failures) -> None:
    barrier.wait()  # every process opens the new file at the same moment
    try:
        store = MemoStore(path)
        store.stats()
        store.close()
    except Exception as exc:  # reported to the parent, which asserts none happened
        failures.put(repr(exc))


def test_processes_that_open_a_new_store_at_once_all_get_it(tmp_path):
    """The points of a sweep are forked together and race to create the shared store (WAL mode,
    tables): SQLite answers the losers "database is locked" at once, and they must wait their
    turn, not fail (before: an opener failed in 4 of 30 tries of four)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    for trial in range(30):
        path = str(tmp_path / f"shared{trial}.sqlite")
        barrier, failures = ctx.Barrier(4), ctx.Queue()
        procs = [
            ctx.Process(target=_open_fresh_store, args=(path, barrier, failures)) for _ in range(4)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert all(p.exitcode == 0 for p in procs)
        assert failures.empty(), failures.get()
        assert MemoStore(path).stats().entries == 0
