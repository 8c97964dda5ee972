"""Keep numba's on-disk kernel cache consistent with the source it was compiled from.

numba (``cache=True``) invalidates a cached function only when *its own* source file changes; a
kernel whose callees or imported constants live in other files (the packet engine's event loop
calls into a dozen modules) would silently keep running the old code after those files change
(an edit, a ``git pull`` into an editable install). :func:`ensure_fresh` hashes every module that
defines jitted code together with every ``wormsim`` module those import, transitively, and when
the hash differs from the one recorded beside the cache, deletes the cached kernels (``*.nbi``,
``*.nbc`` in the package's ``__pycache__`` folders and numba's folders for them under
``NUMBA_CACHE_DIR``) so they
recompile once. It runs when :mod:`wormsim` is imported, before any kernel is called; it costs a
few milliseconds.
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

__all__ = ["kernel_sources", "ensure_fresh"]

_PACKAGE = Path(__file__).resolve().parent
_STAMP = "kernel-sources.sha256"


def _module_file(name: str, package: Path) -> Path | None:
    """The file of module ``wormsim.x.y`` inside ``package``, if it is one."""
    parts = name.split(".")
    if parts[0] != "wormsim":
        return None
    base = package.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(path: Path, root: Path) -> set[Path]:
    """The package's own modules ``path`` imports (absolute and relative, anywhere in it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("wormsim", *path.relative_to(root).with_suffix("").parts))
    if path.name == "__init__.py":
        package = package.rsplit(".", 1)[0] + ".__init__"
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: -node.level]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return {f for n in names if (f := _module_file(n, root)) is not None}


def kernel_sources(package: Path = _PACKAGE) -> list[Path]:
    """Every module of ``package`` with jitted code and the package modules they import,
    transitively."""
    todo = [p for p in package.rglob("*.py") if "njit" in p.read_text(encoding="utf-8")]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(_imports(path, package) - seen)
    return sorted(seen)


def _digest(paths: list[Path], package: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(package)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cache_files(package: Path) -> list[Path]:
    """The package's cached kernels: beside its modules, and in ``NUMBA_CACHE_DIR`` only the
    folders numba keeps for the package's own source folders (a shared cache directory also
    holds other projects' kernels, which are not ours to drop)."""
    found = [p for p in package.rglob("__pycache__/*") if p.suffix in (".nbi", ".nbc")]
    custom = os.environ.get("NUMBA_CACHE_DIR")
    if custom and Path(custom).is_dir():
        from numba.core.caching import UserProvidedCacheLocator

        for folder in {f.parent for f in package.rglob("*.py")}:
            sub = UserProvidedCacheLocator.get_suitable_cache_subpath(str(folder / "x.py"))
            found += [p for p in (Path(custom) / sub).glob("*") if p.suffix in (".nbi", ".nbc")]
    return found


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
        recorded = stamp.read_text().split() if stamp.is_file() else []
        if recorded[:1] == [stats]:
            return False
        digest = _digest(kernel_sources(package), package)
        stale = [] if recorded[1:2] == [digest] else _cache_files(package)
        for path in stale:
            path.unlink(missing_ok=True)
        stamp_dir.mkdir(exist_ok=True)
        stamp.write_text(f"{stats} {digest}\n")
    except OSError:
        return False
    return bool(stale)
