"""Feature normalizations of the hard-negative paper (Algorithm 1 of
arXiv:2311.05139): unit sphere, unit ball, none.

- ``"sphere"``: ``z = f / ||f||`` (every row on the unit sphere);
- ``"ball"``: ``z = f / max(1, ||f||)`` (rows outside the unit ball are projected onto it,
  rows inside are left alone); the paper's default and the only option in its code;
- ``"none"``: ``z = f / sqrt(d)``, what the paper calls "no normalization" (Algorithm 1,
  lines 13-14): a fixed rescaling, not the identity.

Losses take ``normalize=True`` (the library's default, the same as ``"sphere"``),
``normalize=False`` (use the rows exactly as given) or one of the three names above.

The sphere and ball modes use the library's exact row normalization
(:mod:`contrastkit.rows`).
"""

from __future__ import annotations

import math

import torch

from contrastkit.rows import row_norms, unit_rows

FEATURE_NORMALIZATIONS = ("sphere", "ball", "none")


def normalize_features(z: torch.Tensor, mode: str | bool = "sphere") -> torch.Tensor:
    """Apply one of the paper's feature normalizations to the rows of ``z`` (shape ``(B, d)``).

    Args:
        z: embeddings, shape ``(B, d)``.
        mode: ``"sphere"``, ``"ball"`` or ``"none"`` (see the module docstring); ``True`` means
            ``"sphere"`` and ``False`` returns ``z`` unchanged.

    Example:
        >>> import torch
        >>> z = torch.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> normalize_features(z, "ball")
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    resolved = resolve_normalization(mode)
    if resolved is None:
        return z
    if resolved == "sphere":
        return unit_rows(z)
    if resolved == "ball":
        return z / row_norms(z).clamp(min=1.0)
    return z / math.sqrt(z.shape[1])


def resolve_normalization(normalize: str | bool) -> str | None:
    """Map a loss's ``normalize`` argument to a mode name, or ``None`` for "leave as is"."""
    if normalize is True:
        return "sphere"
    if normalize is False:
        return None
    if isinstance(normalize, str) and normalize in FEATURE_NORMALIZATIONS:
        return normalize
    raise ValueError(
        f"normalize must be True, False or one of {FEATURE_NORMALIZATIONS}, got {normalize!r}"
    )
