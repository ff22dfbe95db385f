"""Seeded 2-D toy data sets of LMCL's toy experiment (Chen, Niu, Gong, Li, Yang, Sugiyama,
"Large-Margin Contrastive Learning with Distance Polarization Regularizer", ICML 2021, Sec. 5.1,
Fig. 3 and Table 1): *Three-Bars* and *Nested-Moons*.

The paper gives no generation parameters (number of points, bar sizes, noise); the ones here
are our choice, fixed and documented: both sets are centred at the origin (a linear embedding
``P x`` followed by L2-normalization only sees directions from the origin) and the raw inputs
are hard enough for K-means that clustering them (the paper's "Euclidean space" row) does not
already solve the task.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from contrastkit.checks.scalars import check_count, check_nonnegative, check_positive

#: The toy sets by the name a recipe gives.
TOY_SETS = ("three_bars", "nested_moons")


def three_bars(n_per_class: int = 100, length: float = 3.0, spacing: float = 1.0,
               noise: float = 0.1, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Three parallel vertical bars: class ``c`` (0, 1, 2) has ``x = (c - 1) * spacing`` plus
    Gaussian jitter of standard deviation ``noise``, and ``y`` uniform on ``[-length/2,
    length/2]``. Bars longer than their spacing make K-means on the raw points cut across
    them. Returns float64 points ``(3 n_per_class, 2)`` and int64 labels.

    >>> x, y = three_bars(4, seed=1)
    >>> x.shape, y.bincount().tolist()
    (torch.Size([12, 2]), [4, 4, 4])
    """
    n_per_class = check_count("n_per_class", n_per_class, 1)
    check_positive("length", length)
    check_positive("spacing", spacing)
    check_nonnegative("noise", noise)
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(3 * n_per_class) % 3
    across = (labels.double() - 1) * spacing + noise * _normal(labels.numel(), generator)
    along = length * (torch.rand(labels.numel(), generator=generator, dtype=torch.float64) - 0.5)
    return torch.stack([across, along], dim=1), labels


def nested_moons(n_per_class: int = 150, noise: float = 0.1, seed: int = 0
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Two interleaving half circles of radius 1 (the "two moons"): class 0 is ``(cos t, sin
    t)``, class 1 is ``(1 - cos t, 1/2 - sin t)``, ``t`` uniform on ``[0, pi]``, plus isotropic
    Gaussian noise of standard deviation ``noise``, then centred at the origin (the points'
    mean subtracted). Returns float64 points ``(2 n_per_class, 2)`` and int64 labels.

    >>> x, y = nested_moons(5, seed=1)
    >>> x.shape, y.bincount().tolist()
    (torch.Size([10, 2]), [5, 5])
    """
    n_per_class = check_count("n_per_class", n_per_class, 1)
    check_nonnegative("noise", noise)
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(2 * n_per_class) % 2
    angle = math.pi * torch.rand(labels.numel(), generator=generator, dtype=torch.float64)
    outer = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    inner = torch.stack([1 - torch.cos(angle), 0.5 - torch.sin(angle)], dim=1)
    points = torch.where((labels == 0)[:, None], outer, inner)
    points = points + noise * torch.stack([_normal(labels.numel(), generator) for _ in "xy"], 1)
    return points - points.mean(dim=0), labels


def toy_set(name: str, seed: int = 0, **parameters: float | int
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """The toy set ``name`` (one of :data:`TOY_SETS`) drawn with ``seed`` and its generator's
    keyword ``parameters``."""
    generators: dict[str, Callable[..., tuple[torch.Tensor, torch.Tensor]]] = {
        "three_bars": three_bars, "nested_moons": nested_moons}
    if name not in generators:
        raise ValueError(f"dataset must be one of {', '.join(TOY_SETS)}, got {name!r}")
    return generators[name](seed=seed, **parameters)


def _normal(count: int, generator: torch.Generator) -> torch.Tensor:
    return torch.randn(count, generator=generator, dtype=torch.float64)
