import doctest
import importlib

import pytest

MODULES = ["quantize", "fcg", "partition", "key", "store"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(f"wormsim.memo.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
