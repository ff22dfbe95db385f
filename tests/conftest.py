"""Shared fixtures: seeded random views; tests marked ``cuda`` skip themselves without a CUDA
device (:func:`pytest_collection_modifyitems`). Also the threads of the test processes: OpenMP's
waiting threads sleep instead of spinning (in this process and every process a test starts),
and parallel pytest-xdist workers split the cores, so that a test run beside other work, or in
several workers, does not slow to a crawl (:mod:`contrastkit.threads`)."""

from __future__ import annotations

import os

from contrastkit.threads import THREAD_VARIABLES, quiet_openmp, threads_per_job

quiet_openmp()  # before torch is imported, here and in the processes the tests start
# The thread count is fixed for the whole test run (a run started on a busy machine would
# otherwise take only the free cores, and two runs that a test compares bit for bit could
# differ in rounding); tests/test_threads.py tests the choice itself.
_each = str(threads_per_job(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
for _name in THREAD_VARIABLES:
    os.environ.setdefault(_name, _each)

import pytest  # noqa: E402
import torch  # noqa: E402


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` are skipped where no CUDA device is available."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def random_views(batch: int, dim: int, seed: int = 0, dtype=torch.float64, normalized=False):
    """Two seeded random views of shape (batch, dim); rows unit-norm when ``normalized``."""
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, dim, generator=generator, dtype=dtype)
    v = torch.randn(batch, dim, generator=generator, dtype=dtype)
    if normalized:
        u = torch.nn.functional.normalize(u, dim=1)
        v = torch.nn.functional.normalize(v, dim=1)
    return u, v


@pytest.fixture
def views():
    return random_views
