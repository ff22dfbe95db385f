"""Input validation shared by every loss.

Each check raises ``ValueError`` naming the offending argument and what was expected, so that
bad input never turns into a silent NaN deep inside a similarity matrix.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import torch

from .feature_normalization import unit_rows


def check_finite_tensor(name: str, x: torch.Tensor) -> None:
    """Raise if ``x`` holds a NaN or an infinity.

    ``max |x|`` is NaN or infinite exactly when an entry is (``amax`` propagates NaN): one
    reduction, several times faster than ``isfinite(x).all()``, which matters for small losses
    called every step.
    """
    if x.numel() and not bool(torch.isfinite(x.detach().abs().amax())):
        raise ValueError(f"{name} contains NaN or Inf values; expected finite embeddings")


def check_float_matrix(name: str, x: torch.Tensor, shape: str = "(batch, dim)") -> None:
    """Check that ``x`` is a 2-D floating-point tensor (``shape`` names its axes in errors)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D of shape {shape}, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def check_views(u: torch.Tensor, v: torch.Tensor, min_batch: int = 2) -> None:
    """Check that ``u`` and ``v`` are two views: finite float tensors of one shape ``(B, d)``."""
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
    check_finite_tensor("u", u)
    check_finite_tensor("v", v)


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_finite_number(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite real number, else raise."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def check_dataset_size(n: int, batch_size: int | None = None) -> int:
    """Check the dataset size ``n`` of Def. 3.2 / Def. 5.7: an integer >= 2 and >= the batch."""
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise ValueError(f"n (the dataset size) must be an integer >= 2, got {n!r}")
    n = int(n)
    if n < 2:
        raise ValueError(f"n (the dataset size) must be an integer >= 2, got {n}")
    if batch_size is not None and n < batch_size:
        raise ValueError(
            f"n (the dataset size) must be at least the batch size {batch_size}, got {n}; "
            "pass the number of training samples, e.g. len(dataset)"
        )
    return n


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


VALID_C1_C2 = ((0, 1), (1, 0), (1, 1))


def check_c1_c2(c1: int, c2: int) -> tuple[int, int]:
    """Check that (c1, c2) selects negatives as in Def. 3.1 / 3.2: one of (0,1), (1,0), (1,1)."""
    if (c1, c2) not in VALID_C1_C2:
        raise ValueError(
            f"(c1, c2) must be one of {VALID_C1_C2} (c1: cross-view negatives, c2: within-view "
            f"negatives), got ({c1!r}, {c2!r})"
        )
    return int(c1), int(c2)


def prepare_views(
    u: torch.Tensor, v: torch.Tensor, normalize: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate two views, bring them to one dtype (the wider of the two, as torch promotes)
    and L2-normalize their rows when ``normalize`` is true."""
    check_views(u, v)
    dtype = torch.promote_types(u.dtype, v.dtype)
    u, v = u.to(dtype), v.to(dtype)
    if normalize:
        u, v = unit_rows(u), unit_rows(v)
    return u, v
