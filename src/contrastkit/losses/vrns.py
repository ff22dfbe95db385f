"""VRNS: the auxiliary loss that reduces the variance of negative-pair similarities (Def. 5.7)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._base import ContrastiveLoss
from ._checks import check_dataset_size, check_views


def vrns(
    u: torch.Tensor,
    v: torch.Tensor,
    n: int,
    within_view: bool = False,
    normalize: bool = True,
) -> torch.Tensor:
    r"""Variance reduction of negative-pair similarities, Def. 5.7.

    .. math::
        L_{VRNS} = \frac{1}{B(B-1)} \sum_{i\ne j} \Big(u_i^\top v_j + \frac{1}{n-1}\Big)^2

    It pulls every negative-pair similarity towards ``-1/(n-1)``, the full-batch optimum of
    Theorem 5.1, so it equals ``Var(s_neg) + (mean(s_neg) + 1/(n-1))^2`` over the batch's
    negatives. Add it to a contrastive loss with weight ``lambda`` (30 in the paper's Table 1):
    ``losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=len(dataset))``.

    Args:
        u, v: the two views, shape ``(B, d)``.
        n: the **dataset size** (e.g. 50 000 for CIFAR), not the batch size, as in the authors'
            code; must be ``>= B``.
        within_view: also include the within-view pairs ``(u_i, u_j)`` and ``(v_i, v_j)``,
            ``i != j``; the mean is then over all ``3 B (B - 1)`` negative pairs.
        normalize: L2-normalize the rows first.

    The term is computed in float32 (or float64 for float64 inputs) with autocast disabled:
    in half precision the offset ``1/(n-1)`` (2e-5 for CIFAR) would round away.
    """
    check_views(u, v)
    n = check_dataset_size(n, batch_size=u.shape[0])
    dtype = torch.promote_types(u.dtype, torch.float32)
    with torch.autocast(device_type=u.device.type, enabled=False):
        u, v = u.to(dtype), v.to(dtype)
        if normalize:
            u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
        offset = 1.0 / (n - 1)
        total = _off_diagonal_squared_sum(u @ v.T, offset)
        pairs = 1
        if within_view:
            total = total + _off_diagonal_squared_sum(u @ u.T, offset)
            total = total + _off_diagonal_squared_sum(v @ v.T, offset)
            pairs = 3
        batch = u.shape[0]
        return total / (pairs * batch * (batch - 1))


def _off_diagonal_squared_sum(sims: torch.Tensor, offset: float) -> torch.Tensor:
    """``sum_{i != j} (sims_ij + offset)^2``."""
    squared = (sims + offset).square()
    return squared.sum() - squared.diagonal().sum()


class VRNS(ContrastiveLoss):
    """Module form of :func:`vrns`; ``n`` is the dataset size."""

    name = "vrns"

    def __init__(self, n: int, within_view: bool = False, normalize: bool = True):
        super().__init__()
        self.n = check_dataset_size(n)
        self.within_view = within_view
        self.normalize = normalize

    def forward(self, u, v, labels=None):
        return vrns(u, v, n=self.n, within_view=self.within_view, normalize=self.normalize)

    def extra_repr(self) -> str:
        return f"n={self.n}, within_view={self.within_view}"
