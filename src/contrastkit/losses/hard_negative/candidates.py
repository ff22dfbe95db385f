"""Whom each anchor of the hard-negative losses (:mod:`.loss`) meets and with what weight: the
similarities to its pool (the other view's rows, then its explicit negatives), its positive
pairs, its negative candidates and their hardening law ``q_i(j) ∝ eta_1(z_i^T v_j)``."""

from __future__ import annotations

import torch


def similarities(anchors: torch.Tensor, pool: torch.Tensor,
                 negatives: torch.Tensor | None = None) -> torch.Tensor:
    """``anchors @ pool.T`` (``B x B``) in at least float32, followed by one column per explicit
    negative of each anchor: its own ``(B, k, d)`` (``k`` columns) or a pool ``(M, d)`` (``M``
    columns, the same for every anchor)."""
    sims = anchors @ pool.T
    if negatives is not None:
        if negatives.dim() == 3:  # n_{i,m} . z_i, each anchor against its own k
            extra = torch.bmm(negatives, anchors.unsqueeze(2)).squeeze(2)
        else:
            extra = anchors @ negatives.T
        sims = torch.cat([sims, extra], dim=1)
    return sims.to(torch.promote_types(sims.dtype, torch.float32))


def positive_mask(same_class: torch.Tensor, positives: str) -> torch.Tensor:
    """The positive pairs: same-label rows (``"labels"``) or each row's own view."""
    if positives == "labels":
        return same_class
    return torch.eye(same_class.shape[0], dtype=torch.bool, device=same_class.device)


def candidate_mask(same_class: torch.Tensor, candidates: str, explicit: int = 0) -> torch.Tensor:
    """Each anchor's negative candidates among the pool's rows (chosen by ``candidates``), then
    its ``explicit`` negatives, all candidates."""
    if candidates == "other_classes":
        mask = ~same_class
    elif candidates == "all":
        mask = torch.ones_like(same_class)
    else:
        mask = ~torch.eye(same_class.shape[0], dtype=torch.bool, device=same_class.device)
    if explicit:
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], explicit)], dim=1)
    if not bool(mask.any(dim=1).all()):
        raise ValueError(
            f"labels leave an anchor without a negative candidate under candidates="
            f"{candidates!r} (the batch holds a single class)"
        )
    return mask


def negative_log_weights(sims, mask, options):
    """``log q_i(j)``: the hardening law normalized over each anchor's candidates."""
    hardness = options["hardness"]
    if options["hardening"] == "exponential":
        log_eta = hardness * sims
    elif hardness == 0:
        log_eta = torch.zeros_like(sims)
    else:
        shifted = sims + 1.0
        log_eta = torch.where(
            shifted > 0, hardness * torch.log(shifted.clamp(min=torch.finfo(sims.dtype).tiny)),
            -torch.inf,
        )
    log_eta = log_eta.masked_fill(~mask, -torch.inf)
    if bool(torch.isneginf(log_eta).all(dim=1).any()):
        raise ValueError(
            "polynomial hardening gives weight 0 to every negative candidate of an anchor "
            "(all its inner products are <= -1); use epsilon=0 or normalize the embeddings"
        )
    return torch.log_softmax(log_eta, dim=1)
