r"""Distance-polarization regularizer of LMCL (Chen et al., ICML 2021, footnote 3 / Eq. 9;
"Large-Margin Contrastive Learning with Distance Polarization Regularizer", PMLR 139).

Pair distances are ``D_ij = (1 - z_i^T z_j) / 2`` in ``[0, 1]`` (Eq. 3) and every pair inside
the margin band ``(delta_plus, delta_minus)`` pays

.. math::
    h(D) = |\min((D - \delta^+)(D - \delta^-), 0)| = \max(0, (D - \delta^+)(\delta^- - D)),

a concave bump of height ``(delta_minus - delta_plus)^2 / 4`` that pulls pairs below the band's
midpoint towards ``delta_plus`` and pushes those above it towards ``delta_minus``.
"""

from __future__ import annotations

from typing import Any

import torch

from contrastkit.checks.scalars import check_choice, check_margin_band
from contrastkit.dtypes import cast, promoted

from .base import ContrastiveLoss
from .registry import register
from .views import SharedViews, public_form

POLARIZATION_REDUCTIONS = ("mean", "sum")
POLARIZATION_VIEWS = ("within", "cross", "all")


def pair_distances(a: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """The matrix of LMCL distances ``D_ij = (1 - a_i^T b_j) / 2`` (Eq. 3); ``b`` defaults to
    ``a``. Rows are expected to be unit vectors (then ``D = ||a_i - b_j||^2 / 4``).

    Example:
        >>> import torch
        >>> pair_distances(torch.eye(2))
        tensor([[0.0000, 0.5000],
                [0.5000, 0.0000]])
    """
    return (1.0 - a @ (a if b is None else b).T) / 2.0


def polarization_shared(
    shared: SharedViews,
    delta_plus: float = 0.1,
    delta_minus: float = 0.5,
    reduction: str = "mean",
    views: str = "within",
    normalize: bool = True,
) -> torch.Tensor:
    r""":func:`polarization` (footnote 3, Eq. 9) on a :class:`SharedViews`.

    The distances ``D = (1 - s) / 2`` (Eq. 3) are read off the shared similarity products
    ``u u^T``, ``v v^T``, ``u v^T`` (:meth:`SharedViews.similarities`), so a term of the same
    composite that uses them too (another polarization term, the spectral loss's ``u v^T``)
    computes them once. The fused kernels of SimCLR, InfoNCE, SupCon or SigLIP keep no
    similarity matrix another term could read (see :mod:`contrastkit.losses.views`): next to
    them the products are computed here.
    """
    delta_plus, delta_minus = check_margin_band(delta_plus, delta_minus)
    reduction = check_choice("reduction", reduction, POLARIZATION_REDUCTIONS)
    views = check_choice("views", views, POLARIZATION_VIEWS)
    u, _ = shared.prepared(normalize)
    batch = u.shape[0]
    upper = torch.triu(torch.ones(batch, batch, dtype=torch.bool, device=u.device), diagonal=1)

    def distances_of(pair: str) -> torch.Tensor:  # pair_distances, from the shared product
        similarities = shared.similarities(pair, normalize)  # in the views' (or autocast) dtype
        # the distances and the band penalty in at least float32: in half precision the band's
        # edges (0.1) and the products (D - delta_plus)(delta_minus - D) would be rounded
        return (1.0 - cast(similarities, promoted(similarities.dtype, torch.float32))) / 2.0

    distances = []
    if views in ("within", "all"):
        distances += [distances_of("uu")[upper], distances_of("vv")[upper]]
    if views in ("cross", "all"):
        off_diagonal = upper | upper.T
        distances.append(distances_of("uv")[off_diagonal])
    # in float32 (float64 for float64 views), as the other losses' reductions: under float16
    # autocast a sum over a large batch would overflow (0.04 per pair: 65 504 at 1 280 rows)
    penalty = _band_penalty(torch.cat(distances), delta_plus, delta_minus)
    return penalty.mean() if reduction == "mean" else penalty.sum()


@public_form(polarization_shared)
def polarization(u: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    r"""LMCL's distance-polarization regularizer :math:`\mathcal R_1` (footnote 3, Eq. 9).

    ``reduction`` over the selected pairs of distinct samples:

    - ``"mean"`` (default): the mean of ``h(D)`` over the pairs, at most
      ``(delta_minus - delta_plus)^2 / 4`` (0.04 at the defaults) whatever the batch size;
    - ``"sum"``: the sum over the pairs, each unordered pair counted once; twice this is the
      entry-wise l1 norm of footnote 3 over the full symmetric ``N x N`` matrix.

    The paper's Eq. 10 does not fix the normalization (its weight ``lambda = 0.1`` was tuned
    under an unknown convention): under ``"sum"`` the effective weight grows with the square
    of the batch size, under ``"mean"`` it does not.

    ``views`` chooses the pairs; the positive pairs ``(u_i, v_i)`` never enter:

    - ``"within"`` (default): ``(u_i, u_j)`` and ``(v_i, v_j)``, ``i < j`` (the paper
      regularizes the distances between distinct instances);
    - ``"cross"``: ``(u_i, v_j)``, ``i != j``;
    - ``"all"``: both, i.e. every pair of the ``2B`` embeddings except the positive pairs.

    Args:
        u, v: the two views, shape ``(B, d)``.
        delta_plus, delta_minus: the band, ``0 <= delta_plus < delta_minus <= 1`` (the paper:
            0.1 and 0.5, the cosine band (0, 0.8)).
        reduction: ``"mean"`` or ``"sum"``.
        views: ``"within"``, ``"cross"`` or ``"all"``.
        normalize: L2-normalize the rows first (the paper's embeddings are unit vectors).

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> loss = losses.InfoNCE(temperature=0.2) + 0.1 * losses.Polarization()   # Eq. 9
        >>> float(loss(u, v)) > 0
        True
    """
    return polarization_shared(SharedViews(u, v), *args, **kwargs)


def _band_penalty(distances: torch.Tensor, delta_plus: float, delta_minus: float) -> torch.Tensor:
    """``h(D) = max(0, (D - delta_plus)(delta_minus - D))``, footnote 3."""
    return torch.clamp((distances - delta_plus) * (delta_minus - distances), min=0.0)


@register("polarization", regularizer=True)
class Polarization(ContrastiveLoss):
    """Module form of :func:`polarization`; add it to a loss with weight ``lambda``:
    ``losses.SimCLR() + 0.1 * losses.Polarization()`` is LMCL's Eq. 9."""

    hyperparameters = ("delta_plus", "delta_minus")

    def __init__(self, delta_plus: float = 0.1, delta_minus: float = 0.5,
                 reduction: str = "mean", views: str = "within", normalize: bool = True) -> None:
        super().__init__()
        self.delta_plus, self.delta_minus = check_margin_band(delta_plus, delta_minus)
        self.reduction = check_choice("reduction", reduction, POLARIZATION_REDUCTIONS)
        self.views = check_choice("views", views, POLARIZATION_VIEWS)
        self.normalize = normalize

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        return polarization_shared(shared, self.delta_plus, self.delta_minus,
                                   reduction=self.reduction, views=self.views,
                                   normalize=self.normalize)

    def extra_repr(self) -> str:
        return (f"delta_plus={self.delta_plus:g}, delta_minus={self.delta_minus:g}, "
                f"reduction={self.reduction!r}, views={self.views!r}")
