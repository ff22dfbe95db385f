"""Top-k accuracy."""

from __future__ import annotations

import torch


def topk_accuracy(scores: torch.Tensor, labels: torch.Tensor,
                  ks: tuple[int, ...] = (1, 5)) -> dict[str, float]:
    """``{"top1": ..., "top5": ...}`` in percent: how often the true label is among the ``k``
    highest scores (``k`` capped at the number of classes)."""
    if scores.shape[0] != labels.shape[0]:
        raise ValueError(f"labels must have {scores.shape[0]} entries, got {labels.shape[0]}")
    result = {}
    for k in ks:
        top = scores.topk(min(k, scores.shape[1]), dim=1).indices
        hit = (top == labels[:, None]).any(dim=1)
        result[f"top{k}"] = 100.0 * hit.float().mean().item()
    return result
