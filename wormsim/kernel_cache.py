"""Keep numba's on-disk kernel cache consistent with the source it was compiled from.

numba (``cache=True``) invalidates a cached function only when *its own* source file changes; a
kernel whose callees or imported constants live in other files (the packet engine's event loop
calls into a dozen modules) would silently keep running the old code after those files change
(an edit, a ``git pull`` into an editable install). :func:`ensure_fresh` closes that gap one
module at a time, so that an edit recompiles only the kernels that depend on it.

Each module that defines jitted code depends on its *closure*: itself and every ``wormsim``
module it imports, transitively, jitted or not (constants the kernels bake in count). Imports are
read from the source (:mod:`ast`), absolute and relative, anywhere in a file; ``import pkg``
counts the package's ``__init__.py``; and a submodule reached as an attribute of an imported
name counts too (``from wormsim.netsim.packet import wormhole as _wh`` then
``_wh.events.dispatch(...)`` depends on ``packet/wormhole/events.py``), as the Wormhole package
imports its submodules only when first asked for one and its hooks reach them that way.

A module's digest hashes the files of its closure. The digests are recorded in
``__pycache__/kernel-sources.sha256`` of the package; when a digest changes, or a jitted module
appears or goes, that module's cached kernels (``<file stem>.<qualname>-<line>.py<ver>.nbi`` and
``.nbc`` in ``__pycache__`` beside it, or in numba's folder for its source folder under
``NUMBA_CACHE_DIR``) are deleted, so they recompile once; other modules' caches stay. With no
record every cached kernel of the package goes. The check runs when :mod:`wormsim` is imported,
before any kernel is called; when no source file's time or size changed it costs a few
milliseconds and hashes nothing.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["kernel_sources", "kernel_closures", "module_digests", "stale_modules", "ensure_fresh"]

_PACKAGE = Path(__file__).resolve().parent
_STAMP = "kernel-sources.sha256"
_JIT = frozenset({"njit", "jit"})  # a module naming one of these defines jitted code


def _module_file(name: str, package: Path) -> Path | None:
    """The file of module ``wormsim.x.y`` inside ``package``, if it is one."""
    parts = name.split(".")
    if parts[0] != "wormsim" or not all(parts):
        return None
    base = package.joinpath(*parts[1:])
    candidates = (base.with_suffix(".py"),) if len(parts) > 1 else ()
    for path in (*candidates, base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` if ``node`` is a chain of attributes of a name."""
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return [node.id, *reversed(attrs)] if isinstance(node, ast.Name) else None


def _imports(path: Path, root: Path, tree: ast.Module | None = None) -> set[Path]:
    """The package's own modules ``path`` imports (absolute and relative, anywhere in it), and
    the submodules it reaches as attributes of an imported name (``alias.sub``)."""
    if tree is None:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("wormsim", *path.relative_to(root).with_suffix("").parts))
    if path.name == "__init__.py":
        package = package.rsplit(".", 1)[0] + ".__init__"
    names: set[str] = set()
    bound: dict[str, str] = {}  # a name an import binds -> the module (or object) it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names.add(a.name)
                if a.asname:
                    bound[a.asname] = a.name
                else:  # ``import a.b`` binds ``a``
                    top = a.name.split(".", 1)[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: -node.level]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            for a in node.names:
                names.add(f"{base}.{a.name}")
                bound[a.asname or a.name] = f"{base}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (chain := _dotted(node)) and chain[0] in bound:
            names.add(".".join((bound[chain[0]], *chain[1:])))
    return {f for n in names if (f := _module_file(n, root)) is not None}


def _jitted_tree(path: Path) -> ast.Module | None:
    """The syntax tree of ``path`` if it defines jitted code (names ``njit`` or ``jit``: imports
    it, decorates with it, calls it), else None."""
    text = path.read_text(encoding="utf-8")
    if not re.search(r"\bn?jit\b", text):
        return None
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if (
            (isinstance(node, ast.Name) and node.id in _JIT)
            or (isinstance(node, ast.Attribute) and node.attr in _JIT)
            or (isinstance(node, ast.alias) and node.name in _JIT)
        ):
            return tree
    return None


def kernel_closures(package: Path = _PACKAGE) -> dict[Path, set[Path]]:
    """Every module of ``package`` with jitted code -> itself and every package module it
    imports, transitively."""
    trees = {p: t for p in sorted(package.rglob("*.py")) if (t := _jitted_tree(p)) is not None}
    edges: dict[Path, set[Path]] = {}
    closures: dict[Path, set[Path]] = {}
    for module in trees:
        seen: set[Path] = set()
        todo = [module]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            if path not in edges:
                edges[path] = _imports(path, package, trees.get(path))
            todo.extend(edges[path] - seen)
        closures[module] = seen
    return closures


def kernel_sources(package: Path = _PACKAGE) -> list[Path]:
    """Every module of ``package`` with jitted code and the package modules they import,
    transitively."""
    return sorted(set().union(*kernel_closures(package).values()))


def _key(path: Path, package: Path) -> str:
    return path.relative_to(package).as_posix()


def module_digests(package: Path = _PACKAGE) -> dict[str, str]:
    """Every module of ``package`` with jitted code (its path in the package,
    ``netsim/packet/engine.py``) -> a hash of the files of its closure."""
    contents: dict[Path, bytes] = {}
    digests: dict[str, str] = {}
    for module, closure in kernel_closures(package).items():
        h = hashlib.sha256()
        for path in sorted(closure):
            if path not in contents:
                contents[path] = path.read_bytes()
            h.update(_key(path, package).encode() + b"\0")
            h.update(hashlib.sha256(contents[path]).digest())
        digests[_key(module, package)] = h.hexdigest()
    return digests


def stale_modules(old: Mapping[str, str], new: Mapping[str, str]) -> set[str]:
    """The modules whose cached kernels are stale: a changed digest, new, or gone."""
    return {m for m in old.keys() | new.keys() if old.get(m) != new.get(m)}


def _cache_dirs(folder: Path) -> list[Path]:
    """Where numba caches the kernels of the modules in ``folder``: ``__pycache__`` beside
    them, and under ``NUMBA_CACHE_DIR`` only the folder numba keeps for this source folder (a
    shared cache directory also holds other projects' kernels, which are not ours to drop)."""
    dirs = [folder / "__pycache__"]
    custom = os.environ.get("NUMBA_CACHE_DIR")
    if custom and Path(custom).is_dir():
        from numba.core.caching import UserProvidedCacheLocator

        sub = UserProvidedCacheLocator.get_suitable_cache_subpath(str(folder / "x.py"))
        dirs.append(Path(custom) / sub)
    return dirs


def _cache_stem(name: str) -> str:
    """The module file stem of a cache file's name: ``engine`` of
    ``engine.run_kernel-40.py311.nbi`` (and of a library cache's ``guf-engine.f-3.py311.nbi``)."""
    return name.split(".", 1)[0].rsplit("-", 1)[-1]


def _cache_files(package: Path, modules: Iterable[str] | None = None) -> list[Path]:
    """The cached kernels of ``modules`` (paths in ``package``), or of every module of the
    package when None."""
    if modules is None:
        wanted = {(f, None) for f in {p.parent for p in package.rglob("*.py")}}
    else:
        wanted = {((package / m).parent, Path(m).stem) for m in modules}
    found = []
    for folder, stem in wanted:
        for d in _cache_dirs(folder):
            found += [
                p
                for p in d.glob("*")
                if p.suffix in (".nbi", ".nbc") and stem in (None, _cache_stem(p.name))
            ]
    return found


def _read_stamp(stamp: Path) -> tuple[str, dict[str, str] | None]:
    """The recorded quick-check hash and module digests (None: no usable record)."""
    lines = stamp.read_text().splitlines() if stamp.is_file() else []
    if not lines or " " in lines[0]:  # none, or the format of a whole-package digest
        return "", None
    digests = {}
    for line in lines[1:]:
        digest, sep, module = line.partition(" ")
        if not sep:
            return lines[0], None
        digests[module] = digest
    return lines[0], digests


def ensure_fresh(package: Path = _PACKAGE) -> bool:
    """Drop cached kernels compiled from other sources than ``package``'s; True if any were.

    Best effort: a package folder that cannot be written (a system install) is left alone, as
    numba then caches elsewhere and the install replaces every file on upgrade anyway.
    """
    stamp_dir = package / "__pycache__"
    stamp = stamp_dir / _STAMP
    try:
        # quick path: no source file of the package was touched since the last check
        stats = hashlib.sha256(
            "".join(
                f"{q}:{st.st_mtime_ns}:{st.st_size};"
                for q in sorted(package.rglob("*.py"))
                for st in (q.stat(),)
            ).encode()
        ).hexdigest()
        recorded, old = _read_stamp(stamp)
        if recorded == stats:
            return False
        new = module_digests(package)
        stale = _cache_files(package, None if old is None else stale_modules(old, new))
        for path in stale:
            path.unlink(missing_ok=True)
        stamp_dir.mkdir(exist_ok=True)
        stamp.write_text("".join([f"{stats}\n", *(f"{d} {m}\n" for m, d in sorted(new.items()))]))
    except OSError:
        return False
    return bool(stale)
