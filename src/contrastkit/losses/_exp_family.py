"""The exponential members of Def. 3.1 (phi(x) = exp(x / t)), computed in log space.

With ``phi(x) = exp(x / t)``, ``phi((v_j - v_i)^T u_i) = exp(u_i^T v_j / t) / exp(u_i^T v_i / t)``,
so each anchor's term of Def. 3.1 becomes a log-sum-exp over the similarities it is normalized
against, minus the positive logit:

- ``psi(x) = log(1 + x)`` (InfoNCE, SimCLR): the positive is in the normalizer;
- ``psi(x) = log(x)`` (DCL, DHEL): it is not (the "decoupled" losses).

The flags ``cross_view`` (c1) and ``within_view`` (c2) choose the negatives. Similarities are
promoted to at least float32 before the log-sum-exp so the loss stays finite at t = 0.01 and under
half-precision autocast.
"""

from __future__ import annotations

import torch

from ._base import ContrastiveLoss
from ._checks import check_positive, prepare_views


def exp_family_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    temperature: float,
    *,
    cross_view: bool,
    within_view: bool,
    include_positive: bool,
    normalize: bool = True,
) -> torch.Tensor:
    """Symmetric Def. 3.1 loss with ``phi = exp(x / temperature)``; see the module docstring."""
    temperature = check_positive("temperature", temperature)
    u, v = prepare_views(u, v, normalize)
    cross = _logits(u, v, temperature)
    flags = dict(cross_view=cross_view, within_view=within_view, include_positive=include_positive)
    loss_u = _anchor_losses(cross, _logits(u, u, temperature), **flags)
    loss_v = _anchor_losses(cross.T, _logits(v, v, temperature), **flags)
    return 0.5 * (loss_u.mean() + loss_v.mean())


def _logits(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    sims = a @ b.T
    return sims.to(torch.promote_types(sims.dtype, torch.float32)) / temperature


def _anchor_losses(cross, within, *, cross_view, within_view, include_positive):
    """Per-anchor ``logsumexp(normalizer logits) - positive logit``; row i is anchor i."""
    diagonal = torch.eye(cross.shape[0], dtype=torch.bool, device=cross.device)
    positive = cross.diagonal()
    blocks = []
    if cross_view:
        blocks.append(cross if include_positive else cross.masked_fill(diagonal, -torch.inf))
    elif include_positive:
        blocks.append(positive.unsqueeze(1))
    if within_view:
        blocks.append(within.masked_fill(diagonal, -torch.inf))
    return torch.logsumexp(torch.cat(blocks, dim=1), dim=1) - positive


class TemperatureLoss(ContrastiveLoss):
    """Base of the modules whose only hyperparameter is a temperature.

    Subclasses set ``name``, ``default_temperature`` and ``loss_fn`` (the functional form).
    """

    default_temperature = 0.1

    def __init__(self, temperature: float | None = None, normalize: bool = True):
        super().__init__()
        if temperature is None:
            temperature = self.default_temperature
        self.temperature = check_positive("temperature", temperature)
        self.normalize = normalize

    def forward(self, u, v, labels=None):
        return type(self).loss_fn(u, v, temperature=self.temperature, normalize=self.normalize)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature:g}"
