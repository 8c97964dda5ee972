"""The package layers point one way: common base <- stages <- experiment <- CLIs <- pipelines.

Every module under ``wormsim/`` is parsed with :mod:`ast` and every import it makes is checked,
function-local imports included (the CLIs import inside their commands), so a lazy import cannot
hide an upside-down dependency:

- **common base** (``errors``, ``inputs``, ``provenance``, ``rundir``, ``progress``, ``clikit``,
  ``humanize``, ``units``)
  imports no stage package, no experiment layer and no orchestrator;
- **stages** (``workload``, ``collective``, ``netsim``, ``memo``, ``analysis``): their library
  modules import neither the experiment layer (``wormsim.experiment``, which composes every
  stage's spec) nor the orchestrator; a stage's ``cli.py`` may import the experiment layer;
- **orchestrator** (``wormsim.pipelines``) is imported by nothing but the two entry points, the
  top-level ``wormsim.cli`` and the Python API ``wormsim.api`` (and ``wormsim/__init__``'s lazy
  ``run``, which calls the API);
- no module that is not a command-line module imports one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "wormsim"

STAGES = ("workload", "collective", "netsim", "memo", "analysis")
COMMON = ("errors", "inputs", "provenance", "rundir", "run_inputs", "progress", "clikit",
          "humanize", "units")  # fmt: skip
EXPERIMENT = "wormsim.experiment"
PIPELINES = "wormsim.pipelines"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


_KNOWN = {_module_name(p) for p in ROOT.rglob("*.py")}


def _imports(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every ``wormsim`` module (or package) the source of ``module`` imports, anywhere in it.

    ``from a import b`` yields ``a.b`` when that is a module, else ``a``; relative imports are
    resolved against the module's package (``module`` itself when ``is_package``).
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, module)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for alias in node.names:
                sub = f"{name}.{alias.name}"
                found.add(sub if sub in _KNOWN else name)
    return {name for name in found if name == "wormsim" or name.startswith("wormsim.")}


MODULES = {
    _module_name(p): _imports(p.read_text(), _module_name(p), p.name == "__init__.py")
    for p in sorted(ROOT.rglob("*.py"))
}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _is_cli(name: str) -> bool:
    return name.rpartition(".")[2] in ("cli", "__main__")


def _stage(name: str) -> str | None:
    return next((s for s in STAGES if _within(name, f"wormsim.{s}")), None)


def _violations(modules, allowed, forbidden) -> list[str]:
    return sorted(
        f"{mod} imports {imp}"
        for mod, imps in modules.items()
        if allowed(mod)
        for imp in imps
        if forbidden(imp)
    )


def test_the_scan_finds_local_and_relative_imports():
    source = (
        "import wormsim.errors\n"
        "from . import cli\n"
        "from .stage import read_ops\n"
        "def command():\n"
        "    from wormsim.pipelines.orchestrator import run_pipeline\n"
        "    from wormsim import rundir\n"
    )
    assert _imports(source, "wormsim.workload.summary") == {
        "wormsim.errors",
        "wormsim.workload.cli",
        "wormsim.workload.stage",
        "wormsim.pipelines.orchestrator",
        "wormsim.rundir",
    }


def test_the_scan_sees_the_packages():
    """Guard against a scan that silently finds nothing (a moved root, a renamed package)."""
    for name in (*(f"wormsim.{s}" for s in STAGES), *(f"wormsim.{c}" for c in COMMON)):
        assert name in MODULES, name
    assert "wormsim.pipelines.cli" in MODULES
    assert EXPERIMENT in MODULES
    assert any("wormsim.clikit" in imps for imps in MODULES.values())


def test_only_the_entry_points_import_the_orchestrator():
    bad = _violations(
        MODULES,
        lambda m: not _within(m, PIPELINES) and m not in ("wormsim.cli", "wormsim.api"),
        lambda i: _within(i, PIPELINES),
    )
    assert not bad, "\n".join(bad)


def test_no_library_module_imports_a_cli_module():
    bad = _violations(MODULES, lambda m: not _is_cli(m), _is_cli)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("base", COMMON)
def test_the_common_base_imports_no_stage_experiment_or_orchestrator(base):
    bad = _violations(
        MODULES,
        lambda m: m == f"wormsim.{base}",
        lambda i: _stage(i) is not None or _within(i, EXPERIMENT) or _within(i, PIPELINES),
    )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("stage", STAGES)
def test_stage_libraries_do_not_import_the_experiment_layer(stage):
    bad = _violations(
        MODULES,
        lambda m: _stage(m) == stage and not _is_cli(m),
        lambda i: _within(i, EXPERIMENT),
    )
    assert not bad, "\n".join(bad)


def test_the_experiment_layer_imports_no_cli_or_orchestrator():
    bad = _violations(
        MODULES,
        lambda m: _within(m, EXPERIMENT),
        lambda i: _is_cli(i) or _within(i, PIPELINES),
    )
    assert not bad, "\n".join(bad)
