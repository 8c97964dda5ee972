"""Every docstring example in the package runs and gives what it shows."""

import doctest
import importlib
import pkgutil

import pytest

import wormsim


def _modules_with_examples() -> list[str]:
    finder = doctest.DocTestFinder()
    names = []
    for info in pkgutil.walk_packages(wormsim.__path__, "wormsim."):
        if info.name.endswith("__main__"):  # importing it runs the CLI
            continue
        module = importlib.import_module(info.name)
        if any(t.examples for t in finder.find(module, module.__name__)):
            names.append(info.name)
    return names


MODULES = _modules_with_examples()


def test_the_package_has_examples():
    assert len(MODULES) >= 5, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
