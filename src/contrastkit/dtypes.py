"""dtype helpers for the losses' per-call paths: type promotion and casts that dispatch no
operator when there is nothing to do (at small batches each dispatch is a measurable share of a
loss's time)."""

from __future__ import annotations

import contextlib
import functools

import torch


@functools.cache
def promoted(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    """``torch.promote_types(a, b)``, computed once per pair."""
    return torch.promote_types(a, b)


def cast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x.to(dtype)``: ``x`` itself, as ``to`` would return it, when it already has ``dtype``."""
    return x if x.dtype == dtype else x.to(dtype)


_NOTHING = contextlib.nullcontext()


def autocast_off(device_type: str) -> contextlib.AbstractContextManager:
    """``torch.autocast(device_type, enabled=False)`` where autocast is on, else a context that
    does nothing (entering and leaving autocast costs a few microseconds, a share of a small
    loss's call)."""
    if torch.is_autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False)
    return _NOTHING


@contextlib.contextmanager
def full_float32():
    """Float32 matrix products and convolutions computed in full float32 inside the block: on
    a CUDA GPU, PyTorch lets cuDNN's convolutions use TF32 (a 10-bit mantissa) by default, so
    the same model's outputs differ from a CPU's by about 1e-3 relative; inside this block they
    differ by float32 rounding only. For measurements (``contrastkit embed``, the Table 1
    protocol), not for training, where TF32 is the speed PyTorch chose. Nothing changes on the
    CPU."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
