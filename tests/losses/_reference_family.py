"""Slow loop references for the supervised, hard-negative and large-margin losses.

Written straight from the papers' formulas in float64 Python loops over anchors, pairs and
candidates, with no log-space tricks, so they share no code with the implementations.
"""

from __future__ import annotations

import itertools
import math

import torch


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True)


def dot(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a * b).sum())


def supcon_reference(u, v, labels, temperature, normalize=True):
    """Khosla et al. eq. 2 (L_out); ``v=None`` for one view; anchors without positives skipped."""
    z = unit_rows(u) if normalize else u
    y = list(labels.tolist())
    if v is not None:
        z = torch.cat([z, unit_rows(v) if normalize else v])
        y = y + y
    n = len(y)
    anchor_losses = []
    for i in range(n):
        positives = [p for p in range(n) if p != i and y[p] == y[i]]
        if not positives:
            continue
        denominator = sum(math.exp(dot(z[i], z[a]) / temperature) for a in range(n) if a != i)
        total = 0.0
        for p in positives:
            total += -math.log(math.exp(dot(z[i], z[p]) / temperature) / denominator)
        anchor_losses.append(total / len(positives))
    return sum(anchor_losses) / len(anchor_losses)


def hcl_reference(u, v, temperature, beta, tau_plus):
    """Robinson et al.'s criterion (joshr17/HCL image/main.py), raw exponentials, float64."""
    z = torch.cat([unit_rows(u), unit_rows(v)])
    batch = u.shape[0]
    n_total = 2 * batch
    big_n = n_total - 2
    losses = []
    for i in range(n_total):
        partner = (i + batch) % n_total
        pos = math.exp(dot(z[i], z[partner]) / temperature)
        negs = [
            math.exp(dot(z[i], z[j]) / temperature)
            for j in range(n_total) if j not in (i, partner)
        ]
        imp = [neg ** beta for neg in negs]
        mean_imp = sum(imp) / len(imp)
        reweight_neg = sum(w * neg for w, neg in zip(imp, negs, strict=True)) / mean_imp
        ng = (-tau_plus * big_n * pos + reweight_neg) / (1 - tau_plus)
        ng = max(ng, big_n * math.e ** (-1 / temperature))
        losses.append(-math.log(pos / (pos + ng)))
    return sum(losses) / len(losses)


# ---- hard-negative paper (Jiang et al.) ------------------------------------------------------

def psi_infonce_mean(ts):
    return math.log(1 + sum(math.exp(t) for t in ts) / len(ts))


def psi_infonce_sum(ts, alpha=1.0):
    return math.log(alpha + sum(math.exp(t) for t in ts))


def psi_triplet(ts, alpha=1.0):
    return sum(max(t + alpha, 0.0) for t in ts)


def hardening_weight(s, hardening, hardness):
    if hardening == "exponential":
        return math.exp(hardness * s)
    return max(s + 1.0, 0.0) ** hardness


def _pairs_and_laws(anchors, pool, labels, candidates, hardening, hardness, positives="labels"):
    """Yield (anchor, positive, candidate list, their probabilities) for every positive pair:
    the same-label rows (``positives="labels"``) or the anchor's own row (``"views"``)."""
    n = anchors.shape[0]
    y = labels.tolist()
    for i in range(n):
        if candidates == "other_classes":
            cands = [j for j in range(n) if y[j] != y[i]]
        elif candidates == "all":
            cands = list(range(n))
        else:
            cands = [j for j in range(n) if j != i]
        weights = [hardening_weight(dot(anchors[i], pool[j]), hardening, hardness) for j in cands]
        total = sum(weights)
        probs = [w / total for w in weights]
        for p in range(n):
            if (p == i) if positives == "views" else y[p] == y[i]:
                yield i, p, cands, probs


def _reduce(per_pair, reduction):
    if reduction == "pair":
        return sum(loss for _, loss in per_pair) / len(per_pair)
    anchors = sorted({i for i, _ in per_pair})
    per_anchor = []
    for i in anchors:
        mine = [loss for a, loss in per_pair if a == i]
        per_anchor.append(sum(mine) / len(mine))
    return sum(per_anchor) / len(per_anchor)


def hard_negative_importance_reference(
    u, v, labels, *, candidates, psi="infonce_mean", k=256, alpha=1.0, temperature=1.0,
    hardening="exponential", hardness=0.0, reduction="pair", positives="labels",
):
    """The importance-weighted loss: the inner mean over k draws replaced by its expectation."""
    def direction(anchors, pool):
        per_pair = []
        laws = _pairs_and_laws(anchors, pool, labels, candidates, hardening, hardness, positives)
        for i, p, cands, probs in laws:
            s_pos = dot(anchors[i], pool[p])
            ts = [(dot(anchors[i], pool[j]) - s_pos) / temperature for j in cands]
            if psi == "infonce_mean":
                loss = math.log(1 + sum(q * math.exp(t) for q, t in zip(probs, ts, strict=True)))
            elif psi == "infonce_sum":
                mean = sum(q * math.exp(t) for q, t in zip(probs, ts, strict=True))
                loss = math.log(alpha + k * mean)
            else:
                loss = k * sum(q * max(t + alpha, 0) for q, t in zip(probs, ts, strict=True))
            per_pair.append((i, loss))
        return _reduce(per_pair, reduction)

    return 0.5 * (direction(u, v) + direction(v, u))


def hard_negative_exact_reference(
    u, v, labels, *, candidates, k, psi=psi_infonce_mean, temperature=1.0,
    hardening="exponential", hardness=0.0, reduction="pair",
):
    """The exact expectation of the resampled loss: enumerate every k-tuple of candidates.

    The k negatives are i.i.d. from the tilted law (eta separable), so a tuple's probability is
    the product of its members' probabilities (Definition 3 / eq. 8 with the batch as the
    population).
    """
    def direction(anchors, pool):
        per_pair = []
        laws = _pairs_and_laws(anchors, pool, labels, candidates, hardening, hardness)
        for i, p, cands, probs in laws:
            s_pos = dot(anchors[i], pool[p])
            expected = 0.0
            for tup in itertools.product(range(len(cands)), repeat=k):
                prob = math.prod(probs[m] for m in tup)
                ts = [(dot(anchors[i], pool[cands[m]]) - s_pos) / temperature for m in tup]
                expected += prob * psi(ts)
            per_pair.append((i, expected))
        return _reduce(per_pair, reduction)

    return 0.5 * (direction(u, v) + direction(v, u))


# ---- LMCL -------------------------------------------------------------------------------------

def polarization_reference(u, v, delta_plus, delta_minus, reduction, views):
    """Footnote 3 penalty over the chosen pairs, by loops."""
    u, v = unit_rows(u), unit_rows(v)
    n = u.shape[0]
    distances = []
    if views in ("within", "all"):
        for z in (u, v):
            for i in range(n):
                for j in range(i + 1, n):
                    distances.append((1 - dot(z[i], z[j])) / 2)
    if views in ("cross", "all"):
        for i in range(n):
            for j in range(n):
                if i != j:
                    distances.append((1 - dot(u[i], v[j])) / 2)
    penalties = [abs(min((d - delta_plus) * (d - delta_minus), 0.0)) for d in distances]
    return sum(penalties) / len(penalties) if reduction == "mean" else sum(penalties)
