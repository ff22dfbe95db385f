"""Exact references for the fused paths: the generic Def. 3.1 form and float64 loops.

The exp family is checked against :func:`contrastkit.losses.info_sym` (the paper's formula with
``phi = exp(x / t)``, built on full matrices with boolean masks, no log-sum-exp), the sigmoid loss
and VRNS against loops over pairs written from eq. (9) and Def. 5.7, SupCon against its dense
masked formula (:func:`supcon_dense`, itself checked against the float64 loop of
``_reference_family.supcon_reference``).
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


def supcon_dense(z, labels, temperature):
    """Khosla et al. eq. 2 on the full ``n x n`` matrix with boolean masks (the loss's formula
    before the fused path); anchors without a positive are left out. Differentiable."""
    logits = (z @ z.T) / temperature
    is_self = torch.eye(len(z), dtype=torch.bool)
    log_prob = logits - torch.logsumexp(logits.masked_fill(is_self, -torch.inf), dim=1,
                                        keepdim=True)
    is_positive = (labels.unsqueeze(0) == labels.unsqueeze(1)) & ~is_self
    counts = is_positive.sum(dim=1)
    summed = log_prob.masked_fill(~is_positive, 0.0).sum(dim=1)
    return -(summed[counts > 0] / counts[counts > 0]).mean()


def class_labels(rows):
    """Seeded labels for ``rows`` rows: classes of three rows in random order, and one class of
    a single row (no positive in a single view)."""
    labels = torch.randperm(rows, generator=torch.Generator().manual_seed(rows)) // 3
    labels[0] = rows
    return labels


def supcon_inputs(name, u, v):
    """SupCon's embeddings and labels for the test views: both views (``supcon``), or their
    ``2B`` rows as one view (``supcon_single``, which has an anchor without a positive)."""
    if name == "supcon":
        return u, v, class_labels(len(u))
    return torch.cat([u, v]), None, class_labels(2 * len(u))


def fast(name, u, v, **kwargs):
    """Call the named fused loss with the settings the tests use (t = 0.3, n = 50, ...)."""
    if name == "siglip":
        return losses.siglip(u, v, scale=7.0, bias=-3.0, **kwargs)
    if name == "vrns":
        return losses.vrns(u, v, n=50, **kwargs)
    if name == "vrns_within":
        return losses.vrns(u, v, n=50, within_view=True, **kwargs)
    if name in SUPCON:
        return losses.supcon(*supcon_inputs(name, u, v), temperature=0.3, **kwargs)
    return getattr(losses, name)(u, v, temperature=0.3, **kwargs)


def reference(name, u, v):
    """The exact reference matching :func:`fast`."""
    if name == "siglip":
        return siglip_loop(u, v, 7.0, -3.0)
    if name == "vrns":
        return vrns_loop(u, v, 50)
    if name == "vrns_within":
        return vrns_loop(u, v, 50, within_view=True)
    if name in SUPCON:
        z, z2, labels = supcon_inputs(name, F.normalize(u, dim=1), F.normalize(v, dim=1))
        if z2 is not None:
            z, labels = torch.cat([z, z2]), labels.repeat(2)
        return supcon_dense(z, labels, 0.3)
    return exp_family_reference(name, u, v, 0.3)


SUPCON = ["supcon", "supcon_single"]
ALL_LOSSES = [*EXP_FAMILY, "siglip", "vrns", "vrns_within", *SUPCON]


def value_and_grads(loss_fn, u, v):
    value = loss_fn(u, v)
    grads = torch.autograd.grad(value, (u, v))
    return value.detach(), grads
