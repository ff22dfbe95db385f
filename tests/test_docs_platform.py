"""Docstring examples print nothing whose form depends on the platform's arithmetic: a result
that is zero only up to rounding prints as ``0.0`` on one BLAS/LAPACK build and ``-0.0`` on
another, so no example may print a negative zero (print a nonzero value, or round it away)."""

from __future__ import annotations

import doctest
import importlib
import re

import pytest

from tests.test_docs import MODULES

# -0.0, -0.0000 (torch), -0. (numpy); not -0.25
NEGATIVE_ZERO = re.compile(r"-0\.0*(?![0-9])")


class _Recorder(doctest.OutputChecker):
    """Records what every example printed; whether it matches is test_docs.py's business."""

    def __init__(self) -> None:
        self.outputs: list[str] = []

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        self.outputs.append(got)
        return True


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_print_no_negative_zero(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recorder = _Recorder()
    runner = doctest.DocTestRunner(checker=recorder, optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(importlib.import_module(name)):
        runner.run(test, out=lambda _: None)
    assert [out for out in recorder.outputs if NEGATIVE_ZERO.search(out)] == []
