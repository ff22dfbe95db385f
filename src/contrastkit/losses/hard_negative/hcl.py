"""Hard negatives by importance weighting, HCL (Robinson et al., ICLR 2021), in log space."""

from __future__ import annotations

import math
from typing import Any

import torch

from contrastkit.checks.scalars import check_nonnegative, check_probability_below_one

from ..learnable import Setting, TemperatureSetting, check_setting
from ..registry import register
from ..views import SharedViews, public_form


def hcl_shared(
    shared: SharedViews,
    temperature: Setting = 0.5,
    beta: float = 1.0,
    tau_plus: float = 0.1,
    normalize: bool = True,
    detach_weights: bool = False,
) -> torch.Tensor:
    """:func:`hcl` (Robinson et al., eq. 6) on a :class:`SharedViews`: the normalized views are
    those of the other terms of a composite with the same ``normalize``. (Its ``2B x 2B``
    product ``z z^T`` is its own: assembling it from the shared blocks would change its
    rounding.)"""
    temperature = check_setting("temperature", temperature, positive=True)
    beta = check_nonnegative("beta", beta)
    tau_plus = check_probability_below_one("tau_plus", tau_plus, "the positive-class prior")
    u, v = shared.prepared(normalize)
    batch = u.shape[0]
    z = torch.cat([u, v])
    sims = z @ z.T
    logits = sims.to(torch.promote_types(sims.dtype, torch.float32)) / temperature
    index = torch.arange(2 * batch, device=z.device)
    partner = (index + batch) % (2 * batch)
    positive = logits[index, partner]
    not_negative = torch.eye(2 * batch, dtype=torch.bool, device=z.device)
    not_negative[index, partner] = True
    log_weights = torch.log_softmax((beta * logits).masked_fill(not_negative, -torch.inf), dim=1)
    if detach_weights:
        log_weights = log_weights.detach()
    num_negatives = 2 * batch - 2
    log_reweighted = math.log(num_negatives) + torch.logsumexp(
        log_weights + logits.masked_fill(not_negative, -torch.inf), dim=1
    )
    log_ng = _debiased_log_ng(log_reweighted, positive, tau_plus, num_negatives)
    log_ng = torch.clamp(log_ng, min=math.log(num_negatives) - 1.0 / temperature)
    return torch.nn.functional.softplus(log_ng - positive).mean()


@public_form(hcl_shared)
def hcl(u: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    r"""Hard-negative contrastive loss of Robinson et al. (their eq. 6 / ``image/main.py``).

    Over the ``2B`` embeddings ``[u; v]``, anchor ``i`` has one positive ``p`` (its other view)
    and the ``N = 2B - 2`` others as negatives. With ``pos = e^{s_ip/t}``,
    ``neg_j = e^{s_ij/t}`` and importance weights ``w_j = e^{beta s_ij/t} / mean_j e^{beta
    s_ij/t}``:

    .. math::
        R = \sum_j w_j\,neg_j,\qquad
        N_g = \max\Big(\frac{R - \tau^+ N\,pos}{1 - \tau^+},\ N e^{-1/t}\Big),\qquad
        \ell_i = -\log\frac{pos}{pos + N_g}

    and the loss is the mean over the ``2B`` anchors. ``beta = 0`` gives the debiased loss of
    Chuang et al.; ``beta = 0, tau_plus = 0`` gives SimCLR's NT-Xent (:func:`simclr`) on
    normalized embeddings (the floor ``N e^{-1/t}`` is then never active).

    Everything is computed in log space,
    ``log R = log N + logsumexp_j(log_softmax_j(beta s_ij/t) + s_ij/t)``, so
    ``(beta + 1)/t > 88`` does not overflow in float32 (the authors' code computes
    ``exp((beta + 1) s/t)`` directly).

    Args:
        u, v: the two views, shape ``(B, d)``.
        temperature: ``t > 0`` (Robinson et al. use 0.5), a number or a 0-d tensor (which
            receives its gradient).
        beta: concentration ``>= 0`` of the hard-negative weights (they use 0.5 to 6).
        tau_plus: class prior in ``[0, 1)`` used for debiasing (they use 0.1).
        normalize: L2-normalize the rows first.
        detach_weights: stop gradients through the weights ``w_j`` (the authors' code lets
            them flow, which is the default here too).

    Example:
        >>> import torch
        >>> from contrastkit import losses
        >>> u, v = torch.randn(8, 16), torch.randn(8, 16)
        >>> float(losses.hcl(u, v, temperature=0.05, beta=5.0)) > 0   # (beta+1)/t = 120
        True
    """
    return hcl_shared(SharedViews(u, v), *args, **kwargs)


def _debiased_log_ng(log_r: torch.Tensor, positive: torch.Tensor, tau_plus: float,
                     num_negatives: int) -> torch.Tensor:
    """``log((R - tau_plus N pos) / (1 - tau_plus))``, ``-inf`` where the difference is <= 0."""
    if tau_plus == 0.0:
        return log_r
    # R - tau_plus N pos = R (1 - e^a), a = log(tau_plus N pos / R)
    a = math.log(tau_plus * num_negatives) + positive - log_r
    positive_difference = a < 0
    safe_a = torch.where(positive_difference, a, torch.full_like(a, -1.0))
    log_difference = log_r + _log1mexp(safe_a)
    log_difference = torch.where(positive_difference, log_difference, -torch.inf)
    return log_difference - math.log1p(-tau_plus)


def _log1mexp(a: torch.Tensor) -> torch.Tensor:
    """``log(1 - e^a)`` for ``a < 0``, accurate near 0 and for very negative ``a`` (Maechler)."""
    return torch.where(a > -math.log(2.0), torch.log(-torch.expm1(a)), torch.log1p(-torch.exp(a)))


@register("hcl")
class HCL(TemperatureSetting):
    """Module form of :func:`hcl`; ``temperature`` may be a 0-d tensor of the user's, and
    ``learnable=True`` learns it (see :mod:`contrastkit.losses.learnable`)."""

    hyperparameters = ("temperature", "beta", "tau_plus")

    def __init__(self, temperature: Setting | None = None, beta: float = 1.0,
                 tau_plus: float = 0.1, normalize: bool = True, detach_weights: bool = False,
                 *, learnable: bool = False) -> None:
        super().__init__()
        self._init_setting("temperature", temperature, 0.5, learnable)
        self.beta = check_nonnegative("beta", beta)
        self.tau_plus = check_probability_below_one("tau_plus", tau_plus,
                                                    "the positive-class prior")
        self.normalize = normalize
        self.detach_weights = detach_weights

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        return hcl_shared(shared, temperature=self.setting("temperature"), beta=self.beta,
                   tau_plus=self.tau_plus, normalize=self.normalize,
                   detach_weights=self.detach_weights)

    def extra_repr(self) -> str:
        return f"{self._settings_repr()}, beta={self.beta:g}, tau_plus={self.tau_plus:g}"
