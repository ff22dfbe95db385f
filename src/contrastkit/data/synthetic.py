"""Seeded synthetic data: the Gaussian-mixture model of the hard-negative paper.

``x = mu_{y} + sigma * noise`` with ``num_classes`` class means drawn once, on the sphere of
radius ``separation`` (``mean_law="sphere"``) or with i.i.d. components uniform on
``[-separation, separation]`` (``mean_law="uniform"``: the synthetic data of Jiang, Nguyen,
Aeron, Ishwar, "Hard-Negative Sampling for Contrastive Learning: Optimal Representation
Geometry and Neural- vs Dimensional-Collapse", arXiv:2311.05139, Sec. 5, with ``separation=1``,
``noise=1``); labels are balanced.
"""

from __future__ import annotations

import torch

MEAN_LAWS = ("sphere", "uniform")


def gaussian_mixture(
    n: int,
    dim: int,
    num_classes: int,
    separation: float = 3.0,
    noise: float = 1.0,
    seed: int = 0,
    mean_law: str = "sphere",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw ``n`` points ``(n, dim)`` (float32) and their labels ``(n,)`` from a Gaussian mixture.

    The class means have norm ``separation`` (``mean_law="sphere"``) or i.i.d. components
    uniform on ``[-separation, separation]`` (``"uniform"``, the hard-negative paper's law);
    each point adds isotropic noise of standard deviation ``noise``. The same ``seed`` gives
    the same data on every machine.

    >>> x, y = gaussian_mixture(100, 8, num_classes=4, seed=1)
    >>> x.shape, y.bincount().tolist()
    (torch.Size([100, 8]), [25, 25, 25, 25])
    """
    for name, value in (("n", n), ("dim", dim), ("num_classes", num_classes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if num_classes > n:
        raise ValueError(f"num_classes must be <= n, got {num_classes} > {n}")
    if not separation > 0 or not noise >= 0:
        raise ValueError(f"separation must be > 0 and noise >= 0, got {separation}, {noise}")
    if mean_law not in MEAN_LAWS:
        raise ValueError(f"mean_law must be one of {', '.join(MEAN_LAWS)}, got {mean_law!r}")
    generator = torch.Generator().manual_seed(seed)
    if mean_law == "sphere":
        means = torch.randn(num_classes, dim, generator=generator, dtype=torch.float64)
        means = separation * means / means.norm(dim=1, keepdim=True)
    else:
        means = torch.rand(num_classes, dim, generator=generator, dtype=torch.float64)
        means = separation * (2 * means - 1)
    labels = torch.arange(n) % num_classes
    labels = labels[torch.randperm(n, generator=generator)]
    points = means[labels] + noise * torch.randn(n, dim, generator=generator, dtype=torch.float64)
    return points.float(), labels
