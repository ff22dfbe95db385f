"""Supervised contrastive loss, SupCon (Khosla et al., NeurIPS 2020, eq. 2, the "L_out" form)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._base import ContrastiveLoss
from ._checks import check_labels, check_positive, check_views, prepare_views
from ._family_checks import check_choice

NO_POSITIVE_POLICIES = ("exclude", "raise")


def supcon(
    u: torch.Tensor,
    v: torch.Tensor | None,
    labels: torch.Tensor,
    temperature: float = 0.1,
    normalize: bool = True,
    no_positive: str = "exclude",
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

    Args:
        u: first view, shape ``(B, d)``.
        v: second view, shape ``(B, d)``, or ``None`` for a single view.
        labels: 1-D integer tensor of length ``B``, the class of row ``i`` of both views.
        temperature: ``t > 0``.
        normalize: L2-normalize the rows first.
        no_positive: ``"exclude"`` or ``"raise"``, see above.

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
        >>> losses.supcon(u, v, labels, temperature=0.1).shape
        torch.Size([])
    """
    temperature = check_positive("temperature", temperature)
    no_positive = check_choice("no_positive", no_positive, NO_POSITIVE_POLICIES)
    if v is None:
        check_views(u, u)
        z = F.normalize(u, dim=1) if normalize else u
        y = check_labels(labels, u.shape[0])
    else:
        u, v = prepare_views(u, v, normalize)
        z = torch.cat([u, v])
        y = check_labels(labels, u.shape[0]).repeat(2)
    sims = z @ z.T
    logits = sims.to(torch.promote_types(sims.dtype, torch.float32)) / temperature
    is_self = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    normalizer = torch.logsumexp(logits.masked_fill(is_self, -torch.inf), dim=1, keepdim=True)
    log_prob = logits - normalizer
    is_positive = (y.unsqueeze(0) == y.unsqueeze(1)) & ~is_self
    positives_per_anchor = is_positive.sum(dim=1)
    has_positive = positives_per_anchor > 0
    if not bool(has_positive.all()):
        _check_missing_positives(has_positive, no_positive)
    summed = log_prob.masked_fill(~is_positive, 0.0).sum(dim=1)
    per_anchor = -summed[has_positive] / positives_per_anchor[has_positive]
    return per_anchor.mean()


def _check_missing_positives(has_positive: torch.Tensor, no_positive: str) -> None:
    missing = int((~has_positive).sum())
    if not bool(has_positive.any()):
        raise ValueError(
            "labels give no anchor a positive (every class appears once in a single view); "
            "SupCon is undefined for this batch"
        )
    if no_positive == "raise":
        raise ValueError(
            f"labels leave {missing} anchor(s) without a positive (their class appears once); "
            "pass no_positive='exclude' to leave them out of the average"
        )


class SupCon(ContrastiveLoss):
    """Module form of :func:`supcon`; ``forward(u, v, labels)``."""

    name = "supcon"
    uses_labels = True

    def __init__(self, temperature: float = 0.1, normalize: bool = True,
                 no_positive: str = "exclude"):
        super().__init__()
        self.temperature = check_positive("temperature", temperature)
        self.no_positive = check_choice("no_positive", no_positive, NO_POSITIVE_POLICIES)
        self.normalize = normalize

    def forward(self, u, v, labels=None):
        if labels is None:
            raise ValueError("labels are required by SupCon: pass forward(u, v, labels)")
        return supcon(u, v, labels, temperature=self.temperature, normalize=self.normalize,
                      no_positive=self.no_positive)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature:g}, no_positive={self.no_positive!r}"
