"""Each epoch's ``peak_memory_mib``: the CPU peak restarts at every reset where the system
allows it (checked, not assumed), and the trainer records it only then."""

import os
import sys

import numpy as np
import pytest
import torch

from contrastkit.train import memory, pretrain
from contrastkit.train.memory import peak_memory_mib, reset_peak_memory
from tests.train.tiny import tiny_config

CPU = torch.device("cpu")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@linux_only
def test_the_peak_covers_a_large_allocation_still_held():
    """The peak is at least the resident set holding the block. (A sandbox may account the
    block's pages late: CI's once showed neither the resident set nor the peak grown.)"""
    before = _resident_mib()
    block = np.ones(256 * 2**20 // 8)  # 256 MiB, touched
    holding = _resident_mib()
    if holding < before + 250:
        pytest.skip("this system does not show the block in the resident set yet")
    assert peak_memory_mib(CPU) >= holding - 1
    del block


@linux_only
def test_a_reset_forgets_the_earlier_peak_where_the_system_allows_it():
    block = np.ones(256 * 2**20 // 8)
    del block
    high = peak_memory_mib(CPU)
    if not reset_peak_memory(CPU):
        pytest.skip("this system does not let a process reset its peak resident memory")
    assert peak_memory_mib(CPU) < high - 200


@linux_only
def test_a_reset_the_system_ignores_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "_CLEAR_REFS", tmp_path / "clear_refs")  # writable, no effect
    block = np.ones(256 * 2**20 // 8)  # the peak now stands above the resident set
    del block
    assert not reset_peak_memory(CPU)


def test_a_reset_that_cannot_be_written_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "_CLEAR_REFS", tmp_path / "missing" / "clear_refs")
    assert not reset_peak_memory(CPU)


def test_every_epoch_records_its_peak_memory_where_it_restarts(tmp_path):
    if not reset_peak_memory(CPU):
        pytest.skip("this system does not let a process reset its peak resident memory")
    history = pretrain(tiny_config(tmp_path, epochs=2)).history
    assert all(metrics["peak_memory_mib"] > 0 for metrics in history)


def test_no_epoch_records_a_peak_that_did_not_restart(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "_CLEAR_REFS", tmp_path / "missing" / "clear_refs")
    history = pretrain(tiny_config(tmp_path / "run", epochs=2)).history
    assert all("peak_memory_mib" not in metrics for metrics in history)
