"""What the losses do for the GPU, tested on the CPU: the plain-autograd path's larger reach and
the larger backward blocks off the CPU, one host read per call where the small path runs, and,
with the GPU's choices, no float32 copy of a half-precision similarity block in the fused
kernels (the product is widened while its shift is subtracted). ``test_precision.py`` runs the
kernels with the GPU's choices against float64."""

from __future__ import annotations

import contextlib
from functools import partial

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from contrastkit import losses
from contrastkit.losses.kernels import common

from ._fast_reference import ALL_LOSSES, fast, reference, value_and_grads, views
from ._precision import take_the_gpu_choices

CPU, GPU = torch.device("cpu"), torch.device("cuda")  # a device object: no GPU needed


def test_the_plain_path_reaches_4096_squared_entries_off_the_cpu():
    """The folder's fixture sets the threshold to 0 (kernels everywhere): this test restores the
    library's own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 256 * 256)
        assert common.plain_autograd(256, 256, None, CPU)
        assert not common.plain_autograd(257, 256, None, CPU)
        assert common.plain_autograd(512, 512, None, CPU, factor=4)
        assert common.plain_autograd(4096, 4096, None, GPU)
        assert common.plain_autograd(4096, 4096, None, GPU, factor=4)  # CPU-measured factor
        assert not common.plain_autograd(4097, 4096, None, GPU)
        assert not common.plain_autograd(1024, 1024, 512, GPU)  # chunked: the kernels


def test_backward_blocks_are_larger_off_the_cpu():
    assert common.scratch_rows(16384, CPU) == common.SCRATCH_ROWS == 256
    assert common.scratch_rows(16384, GPU) == common.GPU_SCRATCH_ENTRIES // 16384 == 2048
    assert common.scratch_rows(10**9, GPU) == 256  # never fewer rows than on the CPU


@pytest.mark.parametrize("name", ALL_LOSSES)
def test_backward_blocks_of_any_size_give_the_exact_loss(name, monkeypatch):
    """Blocks of 3 rows (many per matrix) and of the whole matrix (a GPU's, at this size)."""
    u, v = views(11, 4, seed=31)
    expected, expected_grads = value_and_grads(lambda a, b: reference(name, a, b), u, v)
    for rows in (3, 10**6):
        monkeypatch.setattr(common, "SCRATCH_ROWS", rows)
        for chunk_size in (None, 4):
            value, grads = value_and_grads(partial(fast, name, chunk_size=chunk_size), u, v)
            torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)
            for grad, expected_grad in zip(grads, expected_grads, strict=True):
                torch.testing.assert_close(grad, expected_grad, rtol=1e-10, atol=1e-12)


_READS = ("tolist", "item", "__bool__", "__int__", "__float__", "__index__")


@contextlib.contextmanager
def _host_reads(monkeypatch):
    """Counts the reads of a tensor's value on the host (each a device synchronisation on a
    GPU): ``.item()``, ``.tolist()``, ``float()``, ``int()``, ``bool()``, ``torch.equal``."""
    reads = []
    for name in _READS:
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name,
                            lambda self, *a, _f=original, _n=name: reads.append(_n) or _f(self, *a))
    equal = torch.equal
    monkeypatch.setattr(torch, "equal", lambda *a: reads.append("equal") or equal(*a))
    yield reads
    monkeypatch.undo()


SMALL_PATH_READS = {
    "info_nce": 1, "simclr": 1, "dcl": 1, "dhel": 1, "siglip": 1, "spectral": 1, "vrns": 1,
    "supcon": 2,  # and its count of anchors with a positive
}


@pytest.mark.parametrize("name", SMALL_PATH_READS)
def test_one_host_read_per_call_on_the_small_path(name, monkeypatch):
    """Both views normalized with one range check (which proves them finite), so a loss on the
    small path reads one value on the host per forward and backward."""
    monkeypatch.setattr(common, "PLAIN_AUTOGRAD_ENTRIES", 10**9)
    module = losses.build(name, {"n": 1000})
    u, v = views(32, 16, seed=32, dtype=torch.float32)
    labels = torch.arange(32) % 5
    with _host_reads(monkeypatch) as reads:
        module(u, v, labels).backward()
    assert len(reads) == SMALL_PATH_READS[name], reads


class _WidenedBlocks(TorchDispatchMode):
    """Records each copy that widens a half-precision block of a similarity matrix (at least
    ``columns`` columns or rows, the other side not the embeddings' width ``dim``)."""

    def __init__(self, columns: int, dim: int):
        super().__init__()
        self.columns, self.dim, self.widened = columns, dim, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in ("_to_copy", "copy_", "to"):
            source = args[1] if name == "copy_" else args[0]
            target = args[0] if name == "copy_" else out
            shape = tuple(source.shape)
            if (source.dtype in (torch.bfloat16, torch.float16) and target.dtype == torch.float32
                    and len(shape) == 2 and max(shape) >= self.columns
                    and min(shape) != self.dim):
                self.widened.append(shape)
        return out


@pytest.mark.parametrize("chunk_size", [None, 7])
@pytest.mark.parametrize("name", ["info_nce", "simclr", "dcl", "dhel", "siglip", "supcon"])
def test_on_a_gpu_the_fused_kernels_make_no_float32_copy_of_a_half_precision_block(
        name, chunk_size, monkeypatch):
    """The forward widens each half-precision product while it subtracts the shift, the
    backward weights its blocks into half precision (on the CPU, where converting operators are
    slow, both make float32 copies)."""
    take_the_gpu_choices(monkeypatch)
    batch, dim = 40, 16
    u, v = (x.detach().bfloat16().requires_grad_() for x in views(batch, dim, seed=33))
    labels = torch.arange(batch) % 5
    loss = losses.build(name, chunk_size=chunk_size)
    with _WidenedBlocks(batch, dim) as seen:
        loss(u, v, labels).backward()
    assert seen.widened == []
