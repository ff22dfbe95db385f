"""The ``cuda`` marker: registered, and its tests skipped where no CUDA device is available
(``tests/conftest.py``), so that they run on a GPU machine and nowhere else."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests import conftest


def _item(*markers):
    item = SimpleNamespace(keywords=dict.fromkeys(markers, True), added=[])
    item.add_marker = item.added.append
    return item


@pytest.mark.parametrize("available", [False, True])
def test_cuda_tests_skip_exactly_where_no_device_is_available(monkeypatch, available):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    on_gpu, anywhere = _item("cuda"), _item("slow")
    conftest.pytest_collection_modifyitems(None, [on_gpu, anywhere])
    assert anywhere.added == []
    if available:
        assert on_gpu.added == []
    else:
        [skip] = on_gpu.added
        assert skip.mark.name == "skip" and "CUDA" in skip.mark.kwargs["reason"]


def test_the_cuda_marker_is_registered(pytestconfig):
    assert any(line.startswith("cuda:") for line in pytestconfig.getini("markers"))
