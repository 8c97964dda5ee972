import networkx as nx
import pytest
from typer.testing import CliRunner

from tests.memo._graphs import fcg_of, namespace
from wormsim.memo import MemoEntry, MemoStore
from wormsim.memo.cli import app

ENV = {"COLUMNS": "200", "WORMSIM_MEMO_STORE": None}


def run(*args, input=None):
    return CliRunner().invoke(app, list(args), input=input, env=ENV)


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "memo.sqlite"
    store = MemoStore(path)
    for n in (2, 3, 4):
        g = fcg_of(nx.path_graph(n))
        store.insert(
            g, namespace(), MemoEntry(dict.fromkeys(g, 25e9), dict.fromkeys(g, 10), 3_000_000)
        )
    g = fcg_of(nx.star_graph(3))
    store.insert(g, namespace(cc="dcqcn"), MemoEntry(dict.fromkeys(g, 1e9), dict.fromkeys(g, 1), 1))
    store.lookup(fcg_of(nx.path_graph(3)), namespace())
    return path


def test_stats(store_path):
    r = run("stats", "--store", str(store_path))
    assert r.exit_code == 0, r.output
    assert "entries" in r.stdout and "hpcc" in r.stdout and "dcqcn" in r.stdout
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines() if line.strip()}
    assert rows["entries"] == ["4"] and rows["hits"] == ["1"] and rows["namespaces"] == ["2"]


def test_inspect(store_path):
    r = run("inspect", "--store", str(store_path), "--limit", "2")
    assert r.exit_code == 0, r.output
    assert "2 shown" in r.stdout and "3.000" in r.stdout and "25" in r.stdout
    r = run("inspect", "--store", str(store_path), "--limit", "0")
    assert "4 shown" in r.stdout
    assert run("inspect", "--store", str(store_path), "--limit", "-1").exit_code == 2


def test_clear(store_path):
    r = run("clear", "--store", str(store_path), input="n\n")
    assert r.exit_code != 0 and MemoStore(store_path).stats().entries == 4
    r = run("clear", "--store", str(store_path), "--yes")
    assert r.exit_code == 0 and "deleted 4 entries" in r.stdout
    assert MemoStore(store_path).stats().entries == 0


@pytest.mark.parametrize("cmd", ["stats", "inspect", "clear"])
def test_bad_store_exit_2(tmp_path, cmd):
    missing = tmp_path / "nope.sqlite"
    r = (
        run(cmd, "--store", str(missing), "--yes")
        if cmd == "clear"
        else run(cmd, "--store", str(missing))
    )
    assert r.exit_code == 2 and "memo store not found" in r.stderr and "Traceback" not in r.output
    assert not missing.exists()
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"\x00garbage" * 512)
    r = run(cmd, "--store", str(bad))
    assert r.exit_code == 2 and "not a wormsim memo store" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.output
