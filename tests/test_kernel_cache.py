"""Cached kernels are dropped when a source they were compiled from changes, and only theirs."""

import os
from pathlib import Path

from wormsim.kernel_cache import (
    ensure_fresh,
    kernel_closures,
    kernel_sources,
    module_digests,
    stale_modules,
)
from wormsim.netsim.cc_registry import REGISTRY


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


def test_each_kernel_module_depends_on_what_it_imports_not_on_the_whole_package():
    closures = {
        str(m).split("wormsim/", 1)[1]: {str(p).split("wormsim/", 1)[1] for p in deps}
        for m, deps in kernel_closures().items()
    }
    engine = closures["netsim/packet/engine.py"]
    assert "netsim/packet/wormhole/events.py" in engine  # only as ``_wh.events`` in hooks.py
    assert "netsim/packet/switch.py" in engine
    assert "netsim/packet/engine.py" not in closures["netsim/fabric/routing.py"]
    assert "kernel_cache.py" not in closures  # names ``njit`` only in its text
    # the physics calls a congestion control through addresses: editing one recompiles its hooks
    controls = {f"netsim/packet/{c.kernel}.py" for c in REGISTRY}
    assert not controls & engine
    assert all(c in closures for c in controls)


def _package(root: Path) -> Path:
    """A fake package: ``kern`` calls ``leaf``; ``user`` reaches ``lazy.sub`` only as an
    attribute of the lazily importing ``lazy`` package; ``solo`` and ``solo_x`` import nothing."""
    pkg = root / "wormsim"
    (pkg / "lazy").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "leaf.py": "from numba import njit\nX = 1\n",
        "kern.py": "from numba import njit\nfrom wormsim.leaf import X\n",
        "lazy/__init__.py": "import importlib\n\ndef __getattr__(n):\n"
        "    return importlib.import_module(f'{__name__}.{n}')\n",
        "lazy/sub.py": "Y = 1\n",
        "user.py": "from numba import njit\nfrom wormsim import lazy as _lz\n\n"
        "@njit(cache=True)\ndef f():\n    return _lz.sub.Y\n",
        "solo.py": "import numba\n\n@numba.njit(cache=True)\ndef g():\n    return 1\n",
        "solo_x.py": "from numba import njit\n",
        "cli.py": "import wormsim.kern\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    return pkg


def test_stale_modules_are_those_whose_closure_changed(tmp_path):
    pkg = _package(tmp_path)
    before = module_digests(pkg)
    assert set(before) == {"leaf.py", "kern.py", "user.py", "solo.py", "solo_x.py"}
    assert stale_modules(before, module_digests(pkg)) == set()  # unchanged tree
    (pkg / "leaf.py").write_text("from numba import njit\nX = 2\n")
    assert stale_modules(before, after := module_digests(pkg)) == {"leaf.py", "kern.py"}
    (pkg / "lazy" / "sub.py").write_text("Y = 2\n")
    assert stale_modules(after, module_digests(pkg)) == {"user.py"}  # through ``_lz.sub``
    (pkg / "cli.py").write_text("import wormsim.kern  # not a kernel\n")
    assert stale_modules(before, module_digests(pkg)) == {"leaf.py", "kern.py", "user.py"}
    (pkg / "solo.py").unlink()
    assert "solo.py" in stale_modules(before, module_digests(pkg))  # gone


def test_a_plain_import_of_a_package_counts_its_init(tmp_path):
    pkg = _package(tmp_path)
    (pkg / "kern.py").write_text("from numba import njit\nimport wormsim.lazy\n")
    before = module_digests(pkg)
    (pkg / "lazy" / "__init__.py").write_text("Z = 3\n")
    assert stale_modules(before, module_digests(pkg)) == {"kern.py", "user.py"}  # and ``_lz``'s


def test_an_edit_drops_only_the_caches_of_the_modules_depending_on_it(tmp_path, monkeypatch):
    from numba.core.caching import UserProvidedCacheLocator

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    pkg = _package(tmp_path)
    cache = pkg / "__pycache__"
    cache.mkdir()
    names = {
        m: [f"{m}.f-3.py311.nbi", f"{m}.f-3.py311.1.nbc"]
        for m in ("leaf", "kern", "user", "solo", "solo_x")
    }

    def fill() -> None:
        for files in names.values():
            for name in files:
                (cache / name).write_text("cached")

    def left() -> set[str]:
        return {p.name.split(".", 1)[0] for p in cache.glob("*.nb?")}

    fill()
    assert ensure_fresh(pkg) and left() == set()  # no record yet: start clean
    fill()
    assert not ensure_fresh(pkg) and left() == set(names)  # nothing changed
    _write(pkg / "leaf.py", "from numba import njit\nX = 2\n")
    assert ensure_fresh(pkg) and left() == {"user", "solo", "solo_x"}
    fill()
    _write(pkg / "lazy" / "sub.py", "Y = 2\n")
    assert ensure_fresh(pkg) and left() == {"leaf", "kern", "solo", "solo_x"}
    fill()
    _write(pkg / "cli.py", "print('hi')\n")
    assert not ensure_fresh(pkg) and left() == set(names)  # no kernel depends on it
    (pkg / "solo.py").unlink()
    assert ensure_fresh(pkg) and left() == {"leaf", "kern", "user", "solo_x"}  # not solo_x.*

    shared = tmp_path / "numba-cache"
    ours = shared / UserProvidedCacheLocator.get_suitable_cache_subpath(str(pkg / "kern.py"))
    ours.mkdir(parents=True)
    for m in ("kern", "solo_x"):
        (ours / f"{m}.f-3.py311.nbi").write_text("cached")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(shared))
    _write(pkg / "kern.py", "from numba import njit\nfrom wormsim.leaf import X  # edited\n")
    assert ensure_fresh(pkg)
    assert {p.name for p in ours.iterdir()} == {"solo_x.f-3.py311.nbi"}
