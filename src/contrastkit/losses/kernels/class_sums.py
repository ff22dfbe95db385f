"""Positive-pair terms of supervised losses from per-class sums, in ``O(B d)``.

For SupCon-style losses the positives of anchor ``a`` are the candidates of its class other than
itself, ``P(a) = {k != self(a) : y_k = y_a}``. Their mean logit needs no ``B x B`` matrix:
``sum_{p in P(a)} z_a . z_p = z_a . (C[y_a] - z_a)`` with ``C[c]`` the sum of class ``c``'s
candidates, so only ``(classes, d)`` sums are formed. Together with
:func:`.row_logsumexp.row_logsumexp` (excluding each anchor's own column) this gives a
supervised loss the fused, chunked and multi-process paths of the other losses.
"""

from __future__ import annotations

import torch

from .common import accumulate_dtype


def mean_positive_logits(
    anchors: torch.Tensor,
    anchor_labels: torch.Tensor,
    candidates: torch.Tensor,
    candidate_labels: torch.Tensor,
    scale: float | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of ``scale * anchor . candidate`` over each anchor's positives, and their number.

    Every anchor must itself be one of the candidates (its own column is left out).

    Args:
        anchors: ``(n_a, d)``; anchor_labels: ``(n_a,)`` integer classes.
        candidates: ``(n_c, d)``; candidate_labels: ``(n_c,)``.
        scale: the inverse temperature.

    Returns:
        ``(mean_logits, counts)``, both ``(n_a,)``; ``mean_logits`` is 0 where ``counts`` is 0
        (an anchor alone in its class), which the caller must handle.
    """
    dtype = accumulate_dtype(torch.promote_types(anchors.dtype, candidates.dtype))
    classes, codes = torch.unique(torch.cat([candidate_labels, anchor_labels]),
                                  return_inverse=True)
    candidate_codes, anchor_codes = codes[: len(candidate_labels)], codes[len(candidate_labels):]
    class_sums = torch.zeros(len(classes), anchors.shape[1], dtype=dtype, device=anchors.device)
    class_sums = class_sums.index_add(0, candidate_codes, candidates.to(dtype))
    class_counts = torch.bincount(candidate_codes, minlength=len(classes))
    x = anchors.to(dtype)
    # index_select, not indexing: its backward is an index_add, indexing's a much slower
    # accumulating index_put
    summed = (x * (class_sums.index_select(0, anchor_codes) - x)).sum(dim=1) * scale
    counts = class_counts[anchor_codes] - 1
    return summed / counts.clamp(min=1).to(dtype), counts
