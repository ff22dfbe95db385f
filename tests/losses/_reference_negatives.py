"""Slow loop references for the losses with explicit negatives, written from the formulas of
``contrastkit.losses.explicit_negatives`` in float64 Python loops (no vectorization, no log-space
tricks), so they share no code with the implementations.

``negatives`` is each anchor's own ``(B, k, d)`` or a pool ``(M, d)``; :func:`anchor_negatives`
lists anchor ``i``'s. The views and negatives are taken as given (normalize them first).
"""

from __future__ import annotations

import math

from tests.losses._reference_family import _reduce, dot, hardening_weight


def anchor_negatives(negatives, i):
    """The explicit negatives anchor ``i`` meets: row ``i`` of its own, or the whole pool."""
    if negatives is None:
        return []
    return list(negatives[i]) if negatives.dim() == 3 else list(negatives)


def info_nce(u, v, negatives, t, direction):
    """Anchor ``u_i`` against ``v_1..v_B`` and its explicit negatives; ``v_i`` against the
    in-batch anchors ``u_1..u_B`` only. ``"symmetric"``: the mean of both directions' terms;
    ``"one_way"``: the mean of the first direction's."""
    n = len(u)
    forward = backward = 0.0
    for i in range(n):
        positive = math.exp(dot(u[i], v[i]) / t)
        candidates = sum(math.exp(dot(u[i], v[j]) / t) for j in range(n))
        candidates += sum(math.exp(dot(u[i], w) / t) for w in anchor_negatives(negatives, i))
        forward -= math.log(positive / candidates)
        anchors = sum(math.exp(dot(u[j], v[i]) / t) for j in range(n))
        backward -= math.log(positive / anchors)
    if direction == "one_way":
        return forward / n
    return (forward + backward) / (2 * n)


def sigmoid(u, v, negatives, scale, bias):
    """Eq. (9) with logits ``scale * cos + bias``: the positive pairs (label +1), every other
    in-batch pair and every (anchor, explicit negative) pair (label -1), summed per anchor."""
    n = len(u)
    total = 0.0
    for i in range(n):
        total += math.log1p(math.exp(-(scale * dot(u[i], v[i]) + bias)))
        for j in range(n):
            if j != i:
                total += math.log1p(math.exp(scale * dot(u[i], v[j]) + bias))
        for w in anchor_negatives(negatives, i):
            total += math.log1p(math.exp(scale * dot(u[i], w) + bias))
    return total / n


def hard_negative_importance(u, v, labels, negatives, *, candidates, psi, k, alpha,
                             temperature, hardening, hardness, reduction="pair"):
    """The importance-weighted hard-negative loss (the inner mean over ``k`` draws replaced by
    its expectation under the hardening law), the explicit negatives joining the candidates of
    the anchors ``u`` (direction ``u -> v``) only; positives: the same-label rows."""
    y = labels.tolist()

    def direction(anchors, pool, explicit):
        n = len(anchors)
        per_pair = []
        for i in range(n):
            if candidates == "other_classes":
                cands = [pool[j] for j in range(n) if y[j] != y[i]]
            elif candidates == "all":
                cands = list(pool)
            else:
                cands = [pool[j] for j in range(n) if j != i]
            cands += anchor_negatives(explicit, i)
            weights = [hardening_weight(dot(anchors[i], c), hardening, hardness) for c in cands]
            probs = [w / sum(weights) for w in weights]
            for p in range(n):
                if y[p] != y[i]:
                    continue
                s_pos = dot(anchors[i], pool[p])
                ts = [(dot(anchors[i], c) - s_pos) / temperature for c in cands]
                mean = sum(q * math.exp(t) for q, t in zip(probs, ts, strict=True))
                if psi == "infonce_mean":
                    loss = math.log(1 + mean)
                elif psi == "infonce_sum":
                    loss = math.log(alpha + k * mean)
                else:
                    loss = k * sum(q * max(t + alpha, 0) for q, t in zip(probs, ts, strict=True))
                per_pair.append((i, loss))
        return _reduce(per_pair, reduction)

    return 0.5 * (direction(u, v, negatives) + direction(v, u, None))
