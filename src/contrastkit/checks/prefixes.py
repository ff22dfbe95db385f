"""Checks of nested embedding prefixes (Matryoshka representation learning): their dimensions and
weights, given as sequences or, in a config, as comma-separated text. No torch import, so the
config uses them without loading torch."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real


def check_prefix_dims(dims: Sequence[int], weights: Sequence[float] | None = None, *,
                      dims_name: str = "dims", weights_name: str = "weights"
                      ) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """``dims`` as a tuple of ints, at least one, each >= 1, strictly increasing, and their
    ``weights`` as floats (``None``: 1 each), as many, each finite and > 0. A ``ValueError``
    naming ``dims_name`` or ``weights_name`` otherwise."""
    if isinstance(dims, str | bytes) or not isinstance(dims, Sequence) or not dims:
        raise ValueError(f"{dims_name} must be a non-empty sequence of dimensions such as "
                         f"(64, 128, 256), got {dims!r}")
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
        raise ValueError(f"{dims_name} must hold integers >= 1, got {tuple(dims)!r}")
    if any(a >= b for a, b in zip(dims, dims[1:], strict=False)):
        raise ValueError(f"{dims_name} must be strictly increasing (each prefix nested in the "
                         f"next), got {tuple(dims)!r}")
    if weights is None:
        return tuple(dims), (1.0,) * len(dims)
    if isinstance(weights, str | bytes) or not isinstance(weights, Sequence):
        raise ValueError(f"{weights_name} must be a sequence of numbers, one per dimension of "
                         f"{dims_name}, or None (1 each), got {weights!r}")
    if len(weights) != len(dims):
        raise ValueError(f"{weights_name} must hold one weight per dimension of {dims_name} "
                         f"({len(dims)}), got {len(weights)}: {tuple(weights)!r}")
    if any(isinstance(w, bool) or not isinstance(w, Real) or not math.isfinite(w) or w <= 0
           for w in weights):
        raise ValueError(f"{weights_name} must hold finite numbers > 0, got "
                         f"{tuple(weights)!r}")
    return tuple(dims), tuple(float(w) for w in weights)


def check_prefixes_fit(dims: Sequence[int], embedding_dim: int, dims_name: str = "dims") -> None:
    """A ``ValueError`` naming ``dims_name`` when the largest of ``dims`` (checked, increasing)
    exceeds ``embedding_dim``, the dimension of the embeddings the prefixes are cut from."""
    if dims[-1] > embedding_dim:
        raise ValueError(f"{dims_name} must be at most the embedding dimension {embedding_dim}, "
                         f"got {tuple(dims)!r}")


def parse_numbers(name: str, text: str, kind: type[int] | type[float]) -> list:
    """The comma-separated numbers of ``text`` (``"64,128,256"``) as ``kind``; ``[]`` for an
    empty text. A ``ValueError`` naming ``name`` otherwise."""
    if not text.strip():
        return []
    try:
        return [kind(part) for part in text.split(",")]
    except ValueError:
        example = "64,128,256" if kind is int else "1,1,2"
        raise ValueError(f"{name} must be comma-separated {kind.__name__}s such as {example}, "
                         f"got {text!r}") from None
