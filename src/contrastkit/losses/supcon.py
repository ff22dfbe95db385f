"""Supervised contrastive loss, SupCon (Khosla et al., NeurIPS 2020, eq. 2, the "L_out" form)."""

from __future__ import annotations

from typing import Any

import torch

from contrastkit.checks.scalars import check_choice
from contrastkit.checks.tensors import check_labels

from .. import distributed as dist_utils
from .kernels import (
    check_chunk_size,
    global_rows,
    mean_positive_logits,
    plain_autograd,
    row_logsumexp,
    small_logits,
)
from .learnable import Setting, TemperatureSetting, check_setting
from .registry import register
from .views import SharedViews, public_form

NO_POSITIVE_POLICIES = ("exclude", "raise")


def supcon_shared(
    shared: SharedViews,
    labels: torch.Tensor,
    temperature: Setting = 0.1,
    normalize: bool = True,
    no_positive: str = "exclude",
    *,
    chunk_size: int | None = None,
    distributed: bool = False,
) -> torch.Tensor:
    """:func:`supcon` (eq. 2) on a :class:`SharedViews`: with two views the normalized, gathered
    batch is the one every term of a composite with the same ``normalize`` and ``distributed``
    uses; ``shared.v`` is ``None`` for a single view (``supcon(u, None, ...)``)."""
    one_view = shared.v is None
    if one_view:
        shared = SharedViews(shared.u, shared.u)
    temperature = check_setting("temperature", temperature, positive=True)
    no_positive = check_choice("no_positive", no_positive, NO_POSITIVE_POLICIES)
    chunk_size = check_chunk_size(chunk_size)
    u, _ = shared.prepared(normalize)
    labels = check_labels(labels, u.shape[0], device=u.device)  # checks before any collective
    if one_view:
        candidates, offset = global_rows(u, distributed)
        anchors, own_columns = u, torch.arange(u.shape[0], device=u.device) + offset
    else:
        anchors, candidates, own_columns = shared.batch(normalize, distributed).stacked()
    views = 1 if one_view else 2
    candidate_labels, _ = global_rows(labels, distributed)
    anchor_labels, candidate_labels = labels.repeat(views), candidate_labels.repeat(views)
    scale = 1.0 / temperature
    if plain_autograd(anchors.shape[0], candidates.shape[0], chunk_size, anchors.device):
        per_anchor, positives = _small_per_anchor(anchors, candidates, own_columns,
                                                  anchor_labels, candidate_labels, scale)
    else:
        log_normalizer = row_logsumexp(anchors, candidates, scale, own_columns.unsqueeze(1),
                                       chunk_size)
        mean_positive, positives = mean_positive_logits(anchors, anchor_labels, candidates,
                                                        candidate_labels, scale)
        per_anchor = log_normalizer - mean_positive
    has_positive = positives > 0
    with_positive, total = _global_counts(has_positive, distributed)
    _check_missing_positives(with_positive, total, no_positive)
    processes = dist_utils.world_size() if distributed else 1
    # this process's share: its anchors' sum / |I| (|I| counted over all processes) times the
    # number of processes, so that the mean of the shares is the loss of the global batch
    return torch.where(has_positive, per_anchor, 0).sum() * (processes / with_positive)


@public_form(supcon_shared)
def supcon(u: torch.Tensor, v: torch.Tensor | None, *args: Any, **kwargs: Any
         ) -> torch.Tensor:
    r"""Supervised contrastive loss (Khosla et al. 2020, eq. 2, :math:`L^{sup}_{out}`).

    The ``2B`` embeddings ``z = [u; v]`` carry the labels ``[labels; labels]``. Anchor ``i`` is
    contrasted against every other embedding ``A(i) = {a != i}``; its positives are the other
    embeddings of its class, ``P(i) = {p != i : y_p = y_i}``:

    .. math::
        L = \frac{1}{|I|}\sum_{i \in I} \frac{-1}{|P(i)|}\sum_{p \in P(i)}
            \log\frac{e^{z_i^\top z_p/t}}{\sum_{a \in A(i)} e^{z_i^\top z_a/t}}

    With two views every anchor has a positive (its other view), and with all-distinct labels
    the loss is exactly :func:`~contrastkit.losses.simclr` (NT-Xent) at the same temperature.

    **Anchors without a positive.** Pass ``v=None`` for a single view (``z = u``): an anchor
    whose class appears once in the batch then has no positive and its term is 0/0. With
    ``no_positive="exclude"`` (default) such anchors are left out of the average (``I`` is the
    set of anchors that have a positive), still serving as negatives for the others; if no
    anchor has a positive, a ``ValueError`` is raised rather than returning 0. With
    ``no_positive="raise"`` any such anchor raises. Khosla et al.'s code returns NaN here and
    pytorch-metric-learning a silent 0.

    **How it is computed** (the fused path of the other losses): anchor ``i``'s term is
    ``logsumexp_{a != i}(z_i . z_a / t) - mean_{p in P(i)} z_i . z_p / t``. The log-sum-exp is
    :func:`.kernels.row_logsumexp` with the anchor's own column left out, and the mean positive
    logit comes from per-class sums (:func:`.kernels.mean_positive_logits`), so no
    ``2B x 2B`` positive mask is formed. Up to ``256 x 256`` matrix entries (``B <= 128`` with
    two views; :data:`.kernels.common.PLAIN_AUTOGRAD_ENTRIES`) the matrix is formed in plain
    autograd instead and the mean positive logit read off it through the label mask, which is
    faster there. ``chunk_size`` (rows per block, default ``None``: one block) bounds forward +
    backward memory to ``O(B * chunk_size)`` with the same value and gradients.
    ``distributed=True`` under torch.distributed makes each process's rows meet the whole global
    batch (embeddings and labels) and returns this process's share of the global loss; their
    mean is the global loss (see :mod:`contrastkit.distributed`). This holds for one view too:
    the anchors with a positive are counted over all processes, and the ``no_positive`` errors
    are raised on every process alike.

    Args:
        u: first view, shape ``(B, d)``.
        v: second view, shape ``(B, d)``, or ``None`` for a single view.
        labels: 1-D integer tensor of length ``B``, the class of row ``i`` of both views.
        temperature: ``t > 0``, a number or a 0-d tensor (which receives its gradient).
        normalize: L2-normalize the rows first.
        no_positive: ``"exclude"`` or ``"raise"``, see above.
        chunk_size: ``None`` or rows per block, see above.
        distributed: use the global batch under torch.distributed, see above.

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
        >>> losses.supcon(u, v, labels, temperature=0.1).shape
        torch.Size([])
    """
    # v=None (one view) is a SharedViews of no second view, which supcon_shared replaces
    return supcon_shared(SharedViews(u, v), *args, **kwargs)  # type: ignore[arg-type]


def _small_per_anchor(anchors: torch.Tensor, candidates: torch.Tensor, own_columns: torch.Tensor,
                      anchor_labels: torch.Tensor, candidate_labels: torch.Tensor,
                      scale: Setting) -> tuple[torch.Tensor, torch.Tensor]:
    """Each anchor's term of eq. 2, ``logsumexp_{a != i} S_ia - mean_{p in P(i)} S_ip``, and
    its number of positives ``|P(i)|``, on a small matrix (:func:`.kernels.plain_autograd`): the
    whole matrix of logits ``S`` (own column at -inf) in plain autograd, the positives' mean
    read off it through the label mask, as eq. 2 is written. The kernel path's per-class sums
    (:func:`.kernels.mean_positive_logits`) avoid the ``B x B`` mask but cost more operators
    than the matrix they save where there are few entries."""
    logits = small_logits(anchors, candidates, scale, own_columns.unsqueeze(1))
    positive = anchor_labels.unsqueeze(1) == candidate_labels.unsqueeze(0)
    positive.scatter_(1, own_columns.unsqueeze(1), False)
    counts = positive.sum(dim=1)
    mean_positive = torch.where(positive, logits, 0).sum(dim=1) / counts.clamp(min=1)
    return logits.logsumexp(dim=1) - mean_positive, counts


def _global_counts(has_positive: torch.Tensor, distributed: bool) -> tuple[int, int]:
    """Numbers of anchors with a positive and of all anchors, over every process when
    ``distributed`` (one all-reduce, so every process normalizes and raises alike), read on the
    host once: the counts are formed on the device."""
    counts = torch.stack([has_positive.sum(), torch.full_like(has_positive, True).sum()])
    if distributed:
        counts = dist_utils.all_reduce_sum(counts)
    with_positive, total = counts.tolist()
    return with_positive, total


def _check_missing_positives(with_positive: int, total: int, no_positive: str) -> None:
    if with_positive == 0:
        raise ValueError(
            "labels give no anchor a positive (every class appears once in a single view); "
            "SupCon is undefined for this batch"
        )
    if no_positive == "raise" and with_positive < total:
        raise ValueError(
            f"labels leave {total - with_positive} anchor(s) without a positive (their class "
            "appears once); pass no_positive='exclude' to leave them out of the average"
        )


@register("supcon")
class SupCon(TemperatureSetting):
    """Module form of :func:`supcon`; ``forward(u, v, labels)``; ``chunk_size`` and
    ``distributed`` are passed through. ``temperature`` may be a 0-d tensor of the user's;
    ``learnable=True`` learns it (see :mod:`.learnable`; initialised at the ``temperature``
    given, else CLIP's 0.07)."""

    hyperparameters = ("temperature",)
    uses_labels = True
    supports_chunking = True
    supports_distributed = True

    def __init__(self, temperature: Setting | None = None, normalize: bool = True,
                 no_positive: str = "exclude", *, learnable: bool = False,
                 chunk_size: int | None = None, distributed: bool = False) -> None:
        super().__init__()
        self._init_setting("temperature", temperature, 0.1, learnable)
        self.no_positive = check_choice("no_positive", no_positive, NO_POSITIVE_POLICIES)
        self.normalize = normalize
        self.chunk_size = check_chunk_size(chunk_size)
        self.distributed = bool(distributed)

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        if labels is None:
            raise ValueError("labels are required by SupCon: pass forward(u, v, labels)")
        return supcon_shared(shared, labels, temperature=self.setting("temperature"),
                             normalize=self.normalize, no_positive=self.no_positive,
                             chunk_size=self.chunk_size, distributed=self.distributed)

    def extra_repr(self) -> str:
        return f"{self._settings_repr()}, no_positive={self.no_positive!r}"
