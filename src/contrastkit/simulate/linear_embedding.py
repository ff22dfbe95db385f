"""LMCL's toy experiment (Chen, Niu, Gong, Li, Yang, Sugiyama, "Large-Margin Contrastive
Learning with Distance Polarization Regularizer", ICML 2021, Sec. 5.1): a linear embedding
``phi(x) = P x`` of 2-D points, ``P`` a 2 x 2 matrix, learned with the NCE loss (Eq. 1) alone
("conventional CL") or plus ``lambda`` times the distance-polarization regularizer (Eq. 9,
LMCL), the positive of each point being the point plus Gaussian noise, Adam.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from contrastkit.checks.scalars import check_count, check_nonnegative, check_positive


@dataclass(frozen=True)
class LinearEmbeddingRun:
    """The learned ``matrix`` ``P`` (float64, ``(d, m)``) and the objective of every step
    (``losses``, ``steps`` entries)."""

    matrix: torch.Tensor
    losses: list[float]

    def embed(self, points: torch.Tensor) -> torch.Tensor:
        """The unit embeddings ``P x / ||P x||`` of ``points`` ``(n, m)``."""
        return torch.nn.functional.normalize(points.to(torch.float64) @ self.matrix.T, dim=1)


def train_linear_embedding(points: torch.Tensor, steps: int = 2000, lr: float = 1e-3,
                           batch_size: int = 64, augment_noise: float = 0.1,
                           temperature: float = 1.0, polarization: float = 0.0,
                           delta_plus: float = 0.1, delta_minus: float = 0.5,
                           reduction: str = "sum", init_scale: float = 0.01, dim: int = 2,
                           seed: int = 0) -> LinearEmbeddingRun:
    """Learn ``P`` (``dim x m``) by Adam (learning rate ``lr``) for ``steps`` steps.

    Each step draws ``batch_size`` distinct points ``x`` (the whole set if smaller; Algorithm 1's
    ``n + 1`` points), their positives ``x + noise`` (standard deviation ``augment_noise``),
    and minimizes ``info_nce(P x, P x+)`` at ``temperature`` (the paper's Eq. 1 has none: 1.0)
    plus ``polarization`` times :func:`contrastkit.losses.polarization` over the pairs of
    distinct points in the batch (both views; ``reduction`` ``"sum"`` is Eq. 10's
    within-batch sum). Embeddings are L2-normalized, as the paper's hypothesis set requires.
    ``polarization = 0`` is conventional CL.

    The paper initializes ``P`` at 0, where ``P x / ||P x||`` is undefined and the gradient
    vanishes; here ``P`` starts at ``init_scale`` times a standard normal matrix (seeded by
    ``seed``, as are the batches and the noise), the nearest start to 0 that can move.
    """
    from contrastkit import losses

    points = _checked_points(points)
    steps = check_count("steps", steps, 0)
    batch_size = min(check_count("batch_size", batch_size, 2), points.shape[0])
    for name, value in (("lr", lr), ("temperature", temperature), ("init_scale", init_scale)):
        check_positive(name, value)
    check_nonnegative("augment_noise", augment_noise)
    check_nonnegative("polarization", polarization)
    regularizer = losses.Polarization(delta_plus, delta_minus, reduction=reduction)
    generator = torch.Generator().manual_seed(seed)
    matrix = init_scale * torch.randn(check_count("dim", dim, 1), points.shape[1],
                                      generator=generator, dtype=torch.float64)
    matrix.requires_grad_(True)
    optimizer = torch.optim.Adam([matrix], lr=lr)
    history = []
    for _ in range(steps):
        batch = points[torch.randperm(points.shape[0], generator=generator)[:batch_size]]
        positives = batch + augment_noise * torch.randn(batch.shape, generator=generator,
                                                        dtype=torch.float64)
        u, v = batch @ matrix.T, positives @ matrix.T
        loss = losses.info_nce(u, v, temperature=temperature)
        if polarization > 0:
            loss = loss + polarization * regularizer(u, v)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(float(loss.detach()))
    return LinearEmbeddingRun(matrix.detach(), history)


def _checked_points(points) -> torch.Tensor:
    points = torch.as_tensor(points, dtype=torch.float64)
    if points.ndim != 2 or points.shape[0] < 2 or not torch.isfinite(points).all():
        raise ValueError(f"points must be a finite (n, m) array with n >= 2, got shape "
                         f"{tuple(points.shape)}")
    return points
