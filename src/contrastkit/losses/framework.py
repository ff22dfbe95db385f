"""The unified framework: Def. 3.1 (InfoNCE-based) and Def. 3.2 (independently additive).

These take any elementwise callables ``phi`` and ``psi`` and follow the paper's formulas
literally, so they are the reference the named, fused losses are checked against
(Remark 3.3 / Tables 2 and 3). They build the full ``B x B`` similarity matrices.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from contrastkit.checks.scalars import check_dataset_size
from contrastkit.dtypes import cast, promoted

from .base import ContrastiveLoss
from .views import prepare_views

Elementwise = Callable[[torch.Tensor], torch.Tensor]


def info_sym(
    u: torch.Tensor,
    v: torch.Tensor,
    phi: Elementwise,
    psi: Elementwise,
    c1: int,
    c2: int,
    normalize: bool = True,
) -> torch.Tensor:
    r"""InfoNCE-based contrastive loss of Def. 3.1, eq. (2), symmetric in the two views.

    .. math::
        L_{info}(U, V) = \frac{1}{B}\sum_i \psi\Big(c_1 \sum_{j\ne i} \phi((v_j - v_i)^\top u_i)
                          + c_2 \sum_{j\ne i} \phi((u_j - v_i)^\top u_i)\Big),
        \qquad L_{info-sym} = \tfrac12 L_{info}(U, V) + \tfrac12 L_{info}(V, U).

    Args:
        u, v: the two views, shape ``(B, d)``; row ``i`` of each is a positive pair.
        phi, psi: elementwise callables on tensors (for InfoNCE, ``exp(x / t)`` and
            ``log1p(x)``; see Table 2 of the paper and ``docs/losses.md``).
        c1, c2: which negatives enter: ``c1`` cross-view pairs ``(u_i, v_j)``, ``c2``
            within-view pairs ``(u_i, u_j)``; one of (0, 1), (1, 0), (1, 1).
        normalize: L2-normalize the rows of ``u`` and ``v`` first.

    Raises:
        ValueError: on malformed views or invalid ``(c1, c2)``.
        FloatingPointError: if ``phi`` or ``psi`` overflow (use float64 or a named loss).
    """
    c1, c2 = check_c1_c2(c1, c2)
    u, v = prepare_views(u, v, normalize)
    s_uv = _widened(u @ v.T)
    loss_u = _info_anchor_losses(s_uv, _widened(u @ u.T), phi, psi, c1, c2)
    loss_v = _info_anchor_losses(s_uv.T, _widened(v @ v.T), phi, psi, c1, c2)
    return _finite("info_sym", 0.5 * loss_u.mean() + 0.5 * loss_v.mean())


def _info_anchor_losses(cross: torch.Tensor, within: torch.Tensor, phi: Elementwise,
                        psi: Elementwise, c1: int, c2: int) -> torch.Tensor:
    """psi(c1 sum_j phi(cross_ij - pos_i) + c2 sum_j phi(within_ij - pos_i)), j != i, per anchor i.

    ``cross[i, j]`` is the anchor's similarity to the other view's sample ``j`` (the positive
    on the diagonal), ``within[i, j]`` its similarity to sample ``j`` of its own view.
    """
    pos = cross.diagonal().unsqueeze(1)
    off_diagonal = ~torch.eye(cross.shape[0], dtype=torch.bool, device=cross.device)
    inner = torch.zeros_like(pos.squeeze(1))
    if c1:
        inner = inner + torch.where(off_diagonal, phi(cross - pos), 0).sum(dim=1)
    if c2:
        inner = inner + torch.where(off_diagonal, phi(within - pos), 0).sum(dim=1)
    return psi(inner)


def ind_add(
    u: torch.Tensor,
    v: torch.Tensor,
    phi: Elementwise,
    psi: Elementwise,
    c1: int,
    c2: int,
    n: int,
    normalize: bool = True,
) -> torch.Tensor:
    r"""Independently additive contrastive loss of Def. 3.2, eq. (3).

    .. math::
        L_{ind-add} = -\frac1n \sum_i \phi(u_i^\top v_i)
            + \frac{c_1}{n(n-1)} \sum_{i\ne j} \psi(u_i^\top v_j)
            + \frac{c_2}{2n(n-1)} \sum_{i\ne j} \big(\psi(u_i^\top u_j) + \psi(v_i^\top v_j)\big)

    The sums run over the batch ``I`` (``B = |I|`` rows) but the normalization uses the dataset
    size ``n``: summing this loss over the mini-batches of a partition of ``[n]`` gives the
    full-batch loss restricted to within-batch pairs. With ``n = B`` it is the usual per-batch
    loss.

    Args:
        u, v: the two views, shape ``(B, d)``.
        phi: concave increasing elementwise callable applied to positive similarities.
        psi: convex increasing elementwise callable applied to negative similarities.
        c1, c2: cross-view / within-view negatives; one of (0, 1), (1, 0), (1, 1).
        n: the dataset size, an integer ``>= max(2, B)``.
        normalize: L2-normalize the rows of ``u`` and ``v`` first.
    """
    c1, c2 = check_c1_c2(c1, c2)
    u, v = prepare_views(u, v, normalize)
    n = check_dataset_size(n, batch_size=u.shape[0])
    off_diagonal = ~torch.eye(u.shape[0], dtype=torch.bool, device=u.device)
    s_uv = _widened(u @ v.T)
    loss = -phi(s_uv.diagonal()).sum() / n
    if c1:
        loss = loss + psi(s_uv[off_diagonal]).sum() / (n * (n - 1))
    if c2:
        within = (psi(_widened(u @ u.T)[off_diagonal]).sum()
                  + psi(_widened(v @ v.T)[off_diagonal]).sum())
        loss = loss + within / (2 * n * (n - 1))
    return _finite("ind_add", loss)


def _widened(similarities: torch.Tensor) -> torch.Tensor:
    """Similarities in at least float32: the products run in the views' dtype (half precision
    on tensor cores), ``phi``, ``psi`` and the sums over pairs in float32."""
    return cast(similarities, promoted(similarities.dtype, torch.float32))


def _finite(name: str, loss: torch.Tensor) -> torch.Tensor:
    if not bool(torch.isfinite(loss)):
        raise FloatingPointError(
            f"{name} produced {loss.item()}: phi or psi overflowed in {loss.dtype}; evaluate in "
            "float64 or use the matching named loss, which works in log space"
        )
    return loss


class InfoSym(ContrastiveLoss):
    """Module form of :func:`info_sym` (Def. 3.1)."""

    name = "info_sym"

    def __init__(self, phi: Elementwise, psi: Elementwise, c1: int, c2: int,
                 normalize: bool = True) -> None:
        super().__init__()
        self.c1, self.c2 = check_c1_c2(c1, c2)
        self.phi, self.psi, self.normalize = phi, psi, normalize

    # takes no explicit negatives (supports_negatives is False): a narrower forward
    def forward(self, u: torch.Tensor, v: torch.Tensor,  # type: ignore[override]
                labels: torch.Tensor | None = None) -> torch.Tensor:
        return info_sym(u, v, self.phi, self.psi, self.c1, self.c2, self.normalize)


class IndAdd(ContrastiveLoss):
    """Module form of :func:`ind_add` (Def. 3.2)."""

    name = "ind_add"

    def __init__(self, phi: Elementwise, psi: Elementwise, c1: int, c2: int, n: int,
                 normalize: bool = True) -> None:
        super().__init__()
        self.c1, self.c2 = check_c1_c2(c1, c2)
        self.n = check_dataset_size(n)
        self.phi, self.psi, self.normalize = phi, psi, normalize

    # takes no explicit negatives (supports_negatives is False): a narrower forward
    def forward(self, u: torch.Tensor, v: torch.Tensor,  # type: ignore[override]
                labels: torch.Tensor | None = None) -> torch.Tensor:
        return ind_add(u, v, self.phi, self.psi, self.c1, self.c2, self.n, self.normalize)


VALID_C1_C2 = ((0, 1), (1, 0), (1, 1))


def check_c1_c2(c1: int, c2: int) -> tuple[int, int]:
    """Check that (c1, c2) selects negatives as in Def. 3.1 / 3.2: one of (0,1), (1,0), (1,1)."""
    if (c1, c2) not in VALID_C1_C2:
        raise ValueError(
            f"(c1, c2) must be one of {VALID_C1_C2} (c1: cross-view negatives, c2: within-view "
            f"negatives), got ({c1!r}, {c2!r})"
        )
    return int(c1), int(c2)
