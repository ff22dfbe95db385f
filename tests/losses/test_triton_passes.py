"""The Triton passes of the GPU's unchunked kernels, checked on the CPU by Triton's interpreter
(``triton_interpreted.py``, run in its own process: Triton decides between compiling and
interpreting when it is imported), and what happens without Triton or off the GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from contrastkit.losses.kernels import triton_passes, whole_matrix

ROOT = Path(__file__).resolve().parents[2]


def test_the_passes_match_float64_in_triton_s_interpreter():
    # before 3.8 the interpreter converted a loop bound passed as an argument with int() on a
    # one-element array, which NumPy 2 refuses (the compiled kernels run under the cuda marker)
    pytest.importorskip("triton", minversion="3.8")
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "-W", "ignore::RuntimeWarning", "tests/losses/triton_interpreted.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout, result.stdout[-2000:]


def test_the_cpu_keeps_the_eager_kernels():
    assert not triton_passes.usable(torch.device("cpu"))
    assert not whole_matrix.applies(torch.device("cpu"), None, torch.float32)


def test_without_triton_a_gpu_keeps_the_eager_kernels(monkeypatch):
    monkeypatch.setattr(triton_passes, "_triton_installed", lambda: False)
    assert not triton_passes.usable(torch.device("cuda"))


@pytest.mark.parametrize(("chunk_size", "dtype"), [(8, torch.float32), (None, torch.float64)])
def test_chunked_or_float64_matrices_keep_the_eager_kernels(monkeypatch, chunk_size, dtype):
    monkeypatch.setattr(triton_passes, "_triton_installed", lambda: True)
    assert triton_passes.usable(torch.device("cuda"))
    assert not whole_matrix.applies(torch.device("cuda"), chunk_size, dtype)
