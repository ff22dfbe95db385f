r"""Explicit negatives beside the in-batch ones, and InfoNCE's one-way form.

:func:`~contrastkit.losses.info_nce`, :func:`~contrastkit.losses.siglip` and the hard-negative
losses (:func:`~contrastkit.losses.hard_negative_loss`: SCL, HSCL, UCL, HUCL) take
``negatives=``, embeddings that are negatives of the anchors ``u`` and of nothing else:

- each anchor's own, shape ``(B, k, d)``: anchor ``u_i`` meets ``n_{i,1} .. n_{i,k}``;
- a pool, shape ``(M, d)``: every anchor meets all of ``w_1 .. w_M``.

``N_i`` is anchor ``i``'s explicit negatives (its own ``k`` or the pool). They are prepared as
the views are (the views' dtype, rows L2-normalized unless ``normalize=False``). With
``s = 1 / temperature`` and ``j`` running over the batch (every process's rows under
``distributed=True``), InfoNCE's two directions are

.. math::
    \ell^{\to}_i = -\log\frac{e^{s\,u_i^\top v_i}}{\sum_j e^{s\,u_i^\top v_j}
                   + \sum_{n \in N_i} e^{s\,u_i^\top n}},
    \qquad
    \ell^{\gets}_i = -\log\frac{e^{s\,u_i^\top v_i}}{\sum_j e^{s\,u_j^\top v_i}}

and the loss is ``(1/2B) sum_i (l->_i + l<-_i)`` (``direction="symmetric"``, the default) or
``(1/B) sum_i l->_i`` (``direction="one_way"``): each candidate ``v_i`` is matched back against
the in-batch anchors only, as the explicit negatives are candidates, not anchors. Without
negatives the symmetric form is the usual InfoNCE (CLIP), computed as before, and the one-way
form is ``cross_entropy(s u v^T, arange(B))``.

sentence-transformers' ``MultipleNegativesRankingLoss`` on ``(anchor, positive, negative_1 ..
negative_k)`` columns, with ``scale`` and cosine similarity, computes ``cross_entropy(scale *
cos(a, [p; n_1; ..; n_k]), arange(B))``: each anchor meets the positives and *every* row's
negatives. That is ``direction="one_way"`` with ``temperature = 1 / scale`` and the pool of all
the batch's negatives (``negatives.reshape(-1, d)`` of the ``(B, k, d)`` ones), on the same
embeddings; its ``MultipleNegativesSymmetricRankingLoss`` is ``direction="symmetric"``. The
``(B, k, d)`` form is the stricter variant in which anchor ``i`` meets its own ``k`` only.

SigLIP adds one negative pair (label -1) per anchor and explicit negative, the mean over
anchors unchanged:

.. math::
    \frac1B \sum_i \Big[\mathrm{softplus}(-(s\,u_i^\top v_i + \beta))
    + \sum_{j \ne i} \mathrm{softplus}(s\,u_i^\top v_j + \beta)
    + \sum_{n \in N_i} \mathrm{softplus}(s\,u_i^\top n + \beta)\Big]

(``s = scale``, ``beta = bias``; the sigmoid loss has no direction). The hard-negative losses
add ``N_i`` to anchor ``u_i``'s negative candidates, whose hardening law reweights them with
the in-batch ones (never positives); the direction ``v -> u`` keeps the in-batch candidates.

Duplicates are not masked: an explicit negative equal to an anchor's positive (or to an
in-batch candidate) counts as a negative as well; dropping them is the caller's job.

Computation: the explicit negatives only add candidates to the anchors' rows, so each loss
adds a term to the in-batch one, through the same paths: a pool ``u W^T`` through the fused
kernels (chunked with ``chunk_size``), each anchor's own ``k`` as an ``O(B k d)`` product
(:func:`.kernels.positive_logits`); InfoNCE adds the log-sum-exps
(``logaddexp``); on a small matrix both go into one plain-autograd matrix of logits. Under
torch.distributed (``distributed=True``) a pool is gathered like the batch, so each process's
anchors meet every process's pool (the single-process loss with the pools concatenated); each
anchor's own negatives stay on its process (:mod:`.kernels.global_batch`).
"""

from __future__ import annotations

import torch
from torch.nn.functional import cross_entropy

from contrastkit.checks.scalars import check_choice

from .kernels import (
    GlobalBatch,
    check_chunk_size,
    plain_autograd,
    positive_logits,
    row_logsumexp,
    small_logits,
    softplus_sum,
    two_way_logsumexp,
)
from .kernels.softplus_sum import softplus
from .learnable import Setting, check_setting
from .views import SharedViews

DIRECTIONS = ("symmetric", "one_way")


def negative_columns(batch: GlobalBatch) -> int:
    """How many explicit negatives each anchor meets: ``k``, ``M`` (every process's pool), or 0
    without negatives."""
    if batch.negatives is None:
        return 0
    return batch.negatives.shape[-2]


def _explicit(batch: GlobalBatch) -> torch.Tensor:
    """The batch's explicit negatives: the functions below are called only on a batch with."""
    assert batch.negatives is not None
    return batch.negatives


def negative_logits(batch: GlobalBatch, scale: Setting) -> torch.Tensor:
    """``scale * u_i . n`` for each anchor and each of its explicit negatives, ``(N, k)`` or
    ``(N, M)``, in plain autograd, rounded as the kernels round (the small paths' extra
    columns)."""
    negatives = _explicit(batch)
    if negatives.dim() == 3:
        return positive_logits(batch.u.unsqueeze(1), negatives, scale)
    return small_logits(batch.u, negatives, scale)


def negative_logsumexp(batch: GlobalBatch, scale: Setting, chunk_size: int | None
                       ) -> torch.Tensor:
    """``log sum_{n in N_i} exp(scale * u_i . n)`` per anchor, ``(N,)``: a pool through
    :func:`.kernels.row_logsumexp` (chunked with ``chunk_size``)."""
    negatives = _explicit(batch)
    if negatives.dim() == 3:
        return negative_logits(batch, scale).logsumexp(dim=1)
    return row_logsumexp(batch.u, negatives, scale, None, chunk_size)


def negative_softplus_sum(batch: GlobalBatch, scale: Setting, bias: Setting,
                          chunk_size: int | None
                          ) -> torch.Tensor:
    """``sum_i sum_{n in N_i} softplus(scale * u_i . n + bias)``: a pool through
    :func:`.kernels.softplus_sum` (chunked with ``chunk_size``)."""
    negatives = _explicit(batch)
    if negatives.dim() == 3:
        return softplus(negative_logits(batch, scale) + bias).sum()
    return softplus_sum(batch.u, negatives, scale, bias, chunk_size)


def info_nce_explicit(
    shared: SharedViews,
    temperature: Setting,
    normalize: bool,
    direction: str,
    chunk_size: int | None,
    distributed: bool,
) -> torch.Tensor:
    """InfoNCE with the explicit negatives of ``shared`` (if any) in the direction
    ``direction``: see the module docstring (``info_nce`` calls it for every case but the
    symmetric one without negatives)."""
    direction = check_choice("direction", direction, DIRECTIONS)
    temperature = check_setting("temperature", temperature, positive=True)
    chunk_size = check_chunk_size(chunk_size)
    batch = shared.batch(normalize, distributed)
    scale, one_way = 1.0 / temperature, direction == "one_way"
    columns = batch.v_all.shape[0] + negative_columns(batch)
    if plain_autograd(batch.u.shape[0], columns, chunk_size, batch.u.device):
        return _small_cross_entropy(batch, scale, one_way)
    positive = positive_logits(batch.u, batch.v, scale)
    lse_v: torch.Tensor | None  # None: one way
    if not one_way and batch.is_local:  # both directions from one pass over u v^T
        lse_u, lse_v = two_way_logsumexp(batch.u, batch.v, scale, None, chunk_size)
    else:
        lse_u = row_logsumexp(batch.u, batch.v_all, scale, None, chunk_size)
        lse_v = None if one_way else row_logsumexp(batch.v, batch.u_all, scale, None, chunk_size)
    if batch.negatives is not None:
        lse_u = torch.logaddexp(lse_u, negative_logsumexp(batch, scale, chunk_size))
    if lse_v is None:  # one way
        return lse_u.mean() - positive.mean()
    return 0.5 * (lse_u.mean() + lse_v.mean()) - positive.mean()


def _small_cross_entropy(batch: GlobalBatch, scale, one_way: bool) -> torch.Tensor:
    """:func:`info_nce_explicit` on a small matrix: anchor ``u_i``'s row of logits (the batch's
    candidates, then its explicit negatives) and its cross-entropy at its positive's column."""
    columns = batch.own_columns()
    in_batch = small_logits(batch.u, batch.v_all, scale)
    logits = in_batch
    if batch.negatives is not None:
        logits = torch.cat([in_batch, negative_logits(batch, scale)], dim=1)
    loss_u = cross_entropy(logits, columns)
    if one_way:
        return loss_u
    logits_v = in_batch.T if batch.is_local else small_logits(batch.v, batch.u_all, scale)
    return 0.5 * (loss_u + cross_entropy(logits_v, columns))
