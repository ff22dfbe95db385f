"""The runnable examples in the geometry docstrings."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["alignment", "collapse", "histogram", "similarity"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"contrastkit.geometry.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
