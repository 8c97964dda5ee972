"""The memo store in Wormhole runs: snapshot isolation, ``memo_mode``, the store's fingerprint,
where the store is, and corrupt entries (wormsim.memo.session, wormsim.netsim.packet.run)."""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import sqlite3
import stat

import numpy as np
import pytest

from tests.netsim._memo_workers import run_on_shared_store, scenario_run
from tests.netsim.test_memo_bridge import WH
from wormsim.memo import MemoStore
from wormsim.memo.rows import EMPTY_FINGERPRINT
from wormsim.memo.store import default_store_path


def _spec(**kw):
    return WH.model_copy(update=kw)


def _state(path):
    """Bytes and mtime of the store, and the names of the files beside it."""
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


def _filled_store(tmp_path):
    """A store that one readwrite run filled (closed, so no -wal file is left)."""
    path = tmp_path / "store" / "memo.sqlite"
    first = scenario_run(None, _spec(memo_path=str(path)))
    assert first.counters["memo_inserts"] >= 1 and path.exists()
    assert not path.with_name("memo.sqlite-wal").exists()
    return path


def test_concurrent_runs_on_one_fresh_store_equal_solo_runs(tmp_path):
    solo = scenario_run(MemoStore(tmp_path / "solo.sqlite"))
    assert solo.counters["memo_hits"] >= 1 and solo.counters["memo_misses"] >= 1
    ctx = mp.get_context("spawn")
    n = 3
    path = tmp_path / "shared.sqlite"
    MemoStore(path).close()  # a fresh store, schema created
    barrier, done, results = ctx.Barrier(n), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=run_on_shared_store, args=(str(path), w == 0, barrier, done, results))
        for w in range(n)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [err for *_, err in got] == [None] * n
    for _, finish, counters, memo, _ in got:
        assert memo.fingerprint == EMPTY_FINGERPRINT  # every run started from the fresh store
        np.testing.assert_array_equal(finish, solo.node_finish_ps)
        for k in ("memo_hits", "memo_misses", "memo_inserts", "events_processed"):
            assert counters[k] == solo.counters[k], k
    # the followers looked up after the leader stored its entries: they were there, unseen
    assert MemoStore(path).stats().entries == solo.counters["memo_inserts"]


def test_read_mode_reruns_are_identical_and_leave_a_read_only_store_untouched(tmp_path):
    path = _filled_store(tmp_path)
    read = _spec(memo_mode="read", memo_path=str(path))
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        before = _state(path)
        a = scenario_run(None, read)
        b = scenario_run(None, read)
        assert _state(path) == before  # same bytes and mtime, no -wal/-shm created
    finally:
        path.parent.chmod(0o755)
        path.chmod(0o644)
    assert a.memo.mode == "read" and a.memo.path == path
    assert a.memo.fingerprint == b.memo.fingerprint != EMPTY_FINGERPRINT
    assert a.counters["memo_snapshot_entries"] >= 1
    np.testing.assert_array_equal(a.node_finish_ps, b.node_finish_ps)
    for k in ("memo_hits", "memo_misses", "memo_inserts", "events_processed"):
        assert a.counters[k] == b.counters[k]
    assert a.counters["memo_hits"] >= 2  # both incasts replayed the stored pattern
    # the same snapshot in readwrite mode gives the same outputs (on a copy of the store)
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(path, copy)
    rw = scenario_run(None, _spec(memo_path=str(copy)))
    assert rw.memo.fingerprint == a.memo.fingerprint and rw.memo.mode == "readwrite"
    np.testing.assert_array_equal(rw.node_finish_ps, a.node_finish_ps)


def test_read_mode_on_a_fresh_path_is_an_error_and_creates_nothing(tmp_path):
    from wormsim.memo import MemoError

    path = tmp_path / "none.sqlite"
    with pytest.raises(MemoError, match="not found"):
        scenario_run(None, _spec(memo_mode="read", memo_path=str(path)))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("off", [{"memo_mode": "off"}, {"memoize": False}])
def test_off_mode_never_creates_a_store(tmp_path, monkeypatch, off):
    env = tmp_path / "env" / "memo.sqlite"
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(env))
    explicit = tmp_path / "explicit.sqlite"
    r = scenario_run(None, _spec(memo_path=str(explicit), **off))
    assert r.memo is None and r.counters["memo_hits"] == r.counters["memo_inserts"] == 0
    assert not explicit.exists() and not env.exists() and not env.parent.exists()
    assert not default_store_path().exists()


def test_the_engine_honours_the_env_var_and_an_explicit_path_wins(tmp_path, monkeypatch):
    env = tmp_path / "env" / "memo.sqlite"
    monkeypatch.setenv("WORMSIM_MEMO_STORE", str(env))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    r = scenario_run(None)
    assert r.memo.path == env and MemoStore(env).stats().entries == r.counters["memo_inserts"]
    assert not (tmp_path / "xdg").exists()
    explicit = tmp_path / "explicit.sqlite"
    r2 = scenario_run(None, _spec(memo_path=str(explicit)))
    assert r2.memo.path == explicit and explicit.exists()
    assert r2.memo.fingerprint == EMPTY_FINGERPRINT  # not the env store's entries


def test_the_fingerprint_changes_with_the_entries(tmp_path):
    path = _filled_store(tmp_path)
    read = _spec(memo_mode="read", memo_path=str(path))
    a = scenario_run(None, read)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE entries SET t_conv_ps = t_conv_ps + 1")
    conn.close()
    assert scenario_run(None, read).memo.fingerprint != a.memo.fingerprint


@pytest.mark.parametrize(
    ("column", "garbage"),
    [
        ("sent_bytes", "'garbage'"),
        ("end_rates_bps", "'[1.0, 2'"),
        ("canon", "'{\"w\": [1]'"),
        ("t_conv_ps", "'soon'"),
        ("n_flows", "-3"),
        ("sent_bytes", "x'00ff'"),
    ],
)
def test_a_corrupt_entry_is_skipped_and_counted_and_the_run_completes(tmp_path, column, garbage):
    path = _filled_store(tmp_path)
    with sqlite3.connect(path) as conn:
        n = conn.execute(f"UPDATE entries SET {column} = {garbage}").rowcount
    conn.close()
    assert n >= 1
    r = scenario_run(None, _spec(memo_path=str(path)))
    fresh = scenario_run(MemoStore(tmp_path / "fresh.sqlite"))
    assert r.counters["memo_corrupt_entries"] == n == r.memo.corrupt_entries
    # unusable entries are misses: the run is the one on an empty store
    np.testing.assert_array_equal(r.node_finish_ps, fresh.node_finish_ps)
    assert r.counters["memo_misses"] == fresh.counters["memo_misses"]
    # and the patterns are stored again, readable by the next run
    again = scenario_run(None, _spec(memo_path=str(path)))
    assert again.counters["memo_hits"] > r.counters["memo_hits"]


def test_a_read_only_store_in_readwrite_mode_is_a_clear_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes to read-only files")
    from wormsim.memo import MemoError

    path = _filled_store(tmp_path)
    path.chmod(stat.S_IRUSR)
    try:
        with pytest.raises(MemoError, match="memo_mode=read"):
            scenario_run(None, _spec(memo_path=str(path)))
    finally:
        path.chmod(0o644)
