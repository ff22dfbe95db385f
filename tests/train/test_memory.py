"""Each epoch's ``peak_memory_mib``: the CPU peak restarts at every reset where the system
allows it, and the trainer records it."""

import sys

import numpy as np
import pytest
import torch

from contrastkit.train import pretrain
from contrastkit.train.memory import peak_memory_mib, reset_peak_memory
from tests.train.tiny import tiny_config

CPU = torch.device("cpu")


def test_a_large_allocation_raises_the_peak_by_its_size():
    reset_peak_memory(CPU)
    before = peak_memory_mib(CPU)
    block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
    assert peak_memory_mib(CPU) >= before + 60
    del block


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux resets the peak")
def test_a_reset_forgets_the_earlier_peak():
    block = np.ones(128 * 2**20 // 8)
    del block
    high = peak_memory_mib(CPU)
    reset_peak_memory(CPU)
    assert peak_memory_mib(CPU) < high - 100


def test_every_epoch_records_its_peak_memory(tmp_path):
    history = pretrain(tiny_config(tmp_path, epochs=2)).history
    assert all(metrics["peak_memory_mib"] > 0 for metrics in history)
