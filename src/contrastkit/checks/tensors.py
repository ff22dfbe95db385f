"""Checks of tensor arguments: embeddings, two views, explicit negatives, labels, random
generators. Each raises ``ValueError`` naming the argument and what was expected, so bad input
never turns into a silent NaN deep inside a similarity matrix."""

from __future__ import annotations

import math

import torch


def check_finite_tensor(name: str, x: torch.Tensor) -> None:
    """Raise if ``x`` holds a NaN or an infinity (one reduction, one host sync; see
    :func:`_max_abs`)."""
    if x.numel() and not math.isfinite(float(_max_abs(x))):
        raise ValueError(f"{name} contains NaN or Inf values; expected finite embeddings")


def _max_abs(x: torch.Tensor) -> torch.Tensor:
    """``max |x|`` as a 0-d tensor: NaN or infinite exactly when an entry is (the infinity norm
    propagates NaN). One fused reduction, several times faster than ``isfinite(x).all()``,
    which matters for small losses called every step."""
    return torch.linalg.vector_norm(x.detach(), ord=math.inf)


def check_float_matrix(name: str, x: torch.Tensor, shape: str = "(batch, dim)") -> None:
    """Check that ``x`` is a 2-D floating-point tensor (``shape`` names its axes in errors)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D of shape {shape}, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def check_views(u: torch.Tensor, v: torch.Tensor, min_batch: int = 2) -> None:
    """Check that ``u`` and ``v`` are two views: finite float tensors of one shape ``(B, d)``
    (:func:`check_view_shapes`, then :func:`check_finite_views`)."""
    check_view_shapes(u, v, min_batch)
    check_finite_views(u, v)


def check_view_shapes(u: torch.Tensor, v: torch.Tensor, min_batch: int = 2) -> None:
    """Check that ``u`` and ``v`` are float tensors of one shape ``(B, d)`` on one device, with
    ``B >= min_batch`` and ``d >= 1``; no reduction and no host sync."""
    check_float_matrix("u", u)
    check_float_matrix("v", v)
    if u.shape != v.shape:
        raise ValueError(
            f"u and v must have the same shape (batch, dim), got u {tuple(u.shape)} "
            f"and v {tuple(v.shape)}"
        )
    if u.device != v.device:
        raise ValueError(f"u and v must be on one device, got {u.device} and {v.device}")
    if u.shape[0] < min_batch:
        raise ValueError(
            f"u and v need a batch of at least {min_batch} rows (one positive pair and at least "
            f"one negative), got batch size {u.shape[0]}"
        )
    if u.shape[1] < 1:
        raise ValueError(f"u and v need at least one feature column, got dim {u.shape[1]}")


def check_negatives(negatives: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> None:
    """Check explicit negatives beside the views ``u, v`` (of shape ``(B, d)``, checked first):
    a floating-point tensor of ``v``'s dtype on ``v``'s device (the view whose rows they join as
    candidates), of shape ``(M, d)`` with ``M >= 1`` (a pool that every anchor meets) or
    ``(B, k, d)`` with ``k >= 1`` (each anchor's own); no reduction and no host sync."""
    if not isinstance(negatives, torch.Tensor):
        raise ValueError(
            f"negatives must be a torch.Tensor or None, got {type(negatives).__name__}")
    batch, dim = u.shape
    shape = tuple(negatives.shape)
    pool = len(shape) == 2 and shape[0] >= 1 and shape[1] == dim
    own = len(shape) == 3 and shape[0] == batch and shape[1] >= 1 and shape[2] == dim
    if not (pool or own):
        raise ValueError(
            f"negatives must have shape (M, {dim}) (a pool every anchor meets, M >= 1) or "
            f"({batch}, k, {dim}) (k >= 1 of each anchor's own), got shape {shape}")
    if not negatives.is_floating_point():
        raise ValueError(f"negatives must be a floating-point tensor, got dtype {negatives.dtype}")
    if negatives.dtype != v.dtype:
        raise ValueError(
            f"negatives must have the dtype of v ({v.dtype}), whose rows they join as "
            f"candidates, got {negatives.dtype}")
    if negatives.device != v.device:
        raise ValueError(
            f"negatives must be on the views' device ({v.device}), got {negatives.device}")


def check_finite_views(u: torch.Tensor, v: torch.Tensor) -> None:
    """Raise if ``u`` or ``v`` holds a NaN or an infinity, naming the view."""
    # both views with one host sync; the per-view checks run only to name the culprit
    if not math.isfinite(float(torch.maximum(_max_abs(u), _max_abs(v)))):
        check_finite_tensor("u", u)
        check_finite_tensor("v", v)


def check_labels(
    labels: torch.Tensor, rows: int, name: str = "labels", device: torch.device | None = None
) -> torch.Tensor:
    """Return ``labels`` (a tensor or a sequence of class ids) as a 1-D int64 tensor with one
    class id per row, on ``device``."""
    if not isinstance(labels, torch.Tensor):
        try:
            labels = torch.as_tensor(labels)
        except (TypeError, ValueError, RuntimeError) as error:
            raise ValueError(
                f"{name} must be a 1-D tensor or sequence of integer class ids, "
                f"got {type(labels).__name__}"
            ) from error
    if labels.dim() != 1:
        raise ValueError(f"{name} must be 1-D of shape ({rows},), got shape {tuple(labels.shape)}")
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer class ids, got dtype {labels.dtype}")
    if labels.shape[0] != rows:
        raise ValueError(
            f"{name} must have one entry per row ({rows} rows), got length {labels.shape[0]}"
        )
    return labels.to(device=labels.device if device is None else device, dtype=torch.int64)


def check_generator(generator: torch.Generator | None, device: torch.device) -> None:
    """A sampling ``generator`` must be a ``torch.Generator`` on the embeddings' device."""
    if generator is None:
        return
    if not isinstance(generator, torch.Generator):
        raise ValueError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    if generator.device.type != device.type:
        raise ValueError(
            f"generator must live on the embeddings' device ({device.type}), "
            f"got a generator on {generator.device.type}"
        )
