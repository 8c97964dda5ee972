"""Cached kernels are dropped when any source they were compiled from changes."""

import os
from pathlib import Path

from wormsim.kernel_cache import ensure_fresh, kernel_sources


def test_kernel_sources_follow_imports_out_of_jitted_modules():
    names = {str(p).split("wormsim/", 1)[1] for p in kernel_sources()}
    assert {"netsim/packet/engine.py", "netsim/flow/kernel.py", "netsim/common/maxmin.py"} <= names
    assert (
        "netsim/common/flow_plan.py" in names
    )  # no jitted code, but constants the kernels bake in
    assert "pipelines/cli.py" not in names


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    st = path.stat()  # a new mtime even within the clock's resolution
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_a_changed_callee_drops_the_cache_and_nothing_else_does(tmp_path):
    pkg = tmp_path / "wormsim"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text("from numba import njit\nfrom wormsim import consts\n")
    (pkg / "consts.py").write_text("X = 1\n")
    (pkg / "cli.py").write_text("print('hi')\n")
    cached = pkg / "__pycache__" / "kern.f-3.py311.nbi"

    cached.write_text("index")
    assert ensure_fresh(pkg) and not cached.exists()  # no record yet: start clean
    cached.write_text("index")
    assert not ensure_fresh(pkg) and cached.exists()  # nothing changed
    _write(pkg / "cli.py", "print('hello')\n")
    assert not ensure_fresh(pkg) and cached.exists()  # not a kernel source
    _write(pkg / "consts.py", "X = 2\n")
    assert ensure_fresh(pkg) and not cached.exists()  # a constant the kernel imports


def test_a_shared_numba_cache_dir_loses_only_our_kernels(tmp_path, monkeypatch):
    from numba.core.caching import UserProvidedCacheLocator

    pkg = tmp_path / "wormsim"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kern.py").write_text("from numba import njit\n")
    shared = tmp_path / "numba-cache"
    ours = shared / UserProvidedCacheLocator.get_suitable_cache_subpath(str(pkg / "kern.py"))
    theirs = shared / "otherproject_0123abcd"
    for d in (ours, theirs):
        d.mkdir(parents=True)
        (d / "f-1.py311.nbi").write_text("index")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(shared))
    assert ensure_fresh(pkg)  # no record yet: drop our kernels
    assert not (ours / "f-1.py311.nbi").exists() and (theirs / "f-1.py311.nbi").exists()
