"""Exact references for the fused paths: the generic Def. 3.1 form and float64 loops.

The exp family is checked against :func:`contrastkit.losses.info_sym` (the paper's formula with
``phi = exp(x / t)``, built on full matrices with boolean masks, no log-sum-exp), the sigmoid loss
and VRNS against loops over pairs written from eq. (9) and Def. 5.7.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from contrastkit import losses

# Table 2 rows: loss name -> (psi, c1, c2); phi is exp(x / t) for all of them.
EXP_FAMILY = {
    "info_nce": (torch.log1p, 1, 0),
    "simclr": (torch.log1p, 1, 1),
    "dcl": (torch.log, 1, 1),
    "dhel": (torch.log, 0, 1),
}


def views(batch, dim, seed=0, dtype=torch.float64):
    """Two seeded random (unnormalized) views that require gradients."""
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, dim, generator=generator, dtype=dtype)
    v = torch.randn(batch, dim, generator=generator, dtype=dtype)
    return u.requires_grad_(), v.requires_grad_()


def exp_family_reference(name, u, v, temperature):
    """Def. 3.1 with ``phi = exp(x / t)`` and the loss's ``psi, c1, c2``, via ``info_sym``."""
    psi, c1, c2 = EXP_FAMILY[name]
    return losses.info_sym(u, v, lambda x: torch.exp(x / temperature), psi, c1, c2)


def siglip_loop(u, v, scale, bias):
    """Eq. (9) in logit form, one pair at a time: label +1 on the diagonal, -1 elsewhere."""
    u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
    total = 0
    for i in range(len(u)):
        for j in range(len(v)):
            logit = scale * (u[i] @ v[j]) + bias
            total = total + F.softplus(-logit if i == j else logit)
    return total / len(u)


def vrns_loop(u, v, n, within_view=False):
    """Def. 5.7, one negative pair at a time."""
    u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
    offset = 1.0 / (n - 1)
    pairs = [(u, v)] + ([(u, u), (v, v)] if within_view else [])
    total = 0
    for a, b in pairs:
        for i in range(len(a)):
            for j in range(len(b)):
                if i != j:
                    total = total + (a[i] @ b[j] + offset) ** 2
    return total / (len(pairs) * len(u) * (len(u) - 1))


def fast(name, u, v, **kwargs):
    """Call the named fused loss with the settings the tests use (t = 0.3, n = 50, ...)."""
    if name == "siglip":
        return losses.siglip(u, v, scale=7.0, bias=-3.0, **kwargs)
    if name == "vrns":
        return losses.vrns(u, v, n=50, **kwargs)
    if name == "vrns_within":
        return losses.vrns(u, v, n=50, within_view=True, **kwargs)
    return getattr(losses, name)(u, v, temperature=0.3, **kwargs)


def reference(name, u, v):
    """The exact reference matching :func:`fast`."""
    if name == "siglip":
        return siglip_loop(u, v, 7.0, -3.0)
    if name == "vrns":
        return vrns_loop(u, v, 50)
    if name == "vrns_within":
        return vrns_loop(u, v, 50, within_view=True)
    return exp_family_reference(name, u, v, 0.3)


ALL_LOSSES = [*EXP_FAMILY, "siglip", "vrns", "vrns_within"]


def value_and_grads(loss_fn, u, v):
    value = loss_fn(u, v)
    grads = torch.autograd.grad(value, (u, v))
    return value.detach(), grads
