"""Many independent sigmoid-loss problems optimized at once (Lee, Chang & Sohn, "Analysis of
Using Sigmoid Loss for Contrastive Learning", AISTATS 2024, arXiv:2402.12613, Sec. 5.2).

A sweep over the temperature ``t`` and bias ``b`` at one ``(n, d)`` is a batch of problems: the
embeddings of all of them are one tensor of shape ``(problems, n, d)`` and one optimizer updates
them together, instead of a loop of small runs. The problems do not interact: each has its own
``(t, b)``, start and (for the encoder) weights and inputs, and its loss depends on its own
slice only.

- :func:`free_sigmoid_runs`: free unit embeddings, projected gradient descent (the paper's
  Fig. 2 protocol: Gaussian start projected onto the sphere, learning rate 0.5, 50 000 steps).
- :func:`encoder_sigmoid_runs`: a two-layer ReLU encoder on Gaussian inputs (Fig. 3).
- :func:`free_infonce_runs`: free unit embeddings on the paper's InfoNCE (Eq. 2) instead, by
  the same projected gradient descent (Corollaries 1, 3 and 4).

``t`` and ``b`` are the paper's: the logit of a pair is ``t u.v - b`` (``t = scale`` and
``b = -bias`` of :func:`contrastkit.losses.siglip`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch.nn.functional import normalize, softplus

from contrastkit.checks.scalars import check_count, check_positive, check_real


def sigmoid_loss_batch(u: torch.Tensor, v: torch.Tensor, t: torch.Tensor, b: torch.Tensor
                       ) -> torch.Tensor:
    r"""The paper's Eq. 3 for each problem of a batch: shape ``(problems,)``.

    .. math::
        \frac1N\Big[\sum_i \mathrm{sp}(b - t\,u_i^\top v_i)
        + \sum_{i\ne j}\mathrm{sp}(t\,u_i^\top v_j - b)\Big]

    ``u``, ``v``: shape ``(problems, n, d)`` (used as given: unit rows are the caller's
    business); ``t``, ``b``: shape ``(problems,)``.
    """
    logits = t[:, None, None] * (u @ v.transpose(1, 2)) - b[:, None, None]
    positives = torch.diagonal(logits, dim1=1, dim2=2)
    # sp(-x) = sp(x) - x turns the positives' terms into the all-pairs sum minus their logits
    return (softplus(logits).sum((1, 2)) - positives.sum(1)) / u.shape[1]


def infonce_loss_batch(u: torch.Tensor, v: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    r"""The paper's Eq. 2, the InfoNCE loss of both directions with temperature ``t`` dividing
    the similarities, for each problem of a batch: shape ``(problems,)``.

    .. math::
        -\frac1N\sum_i \log\frac{e^{u_i^\top v_i/t}}{\sum_j e^{u_i^\top v_j/t}}
        -\frac1N\sum_i \log\frac{e^{u_i^\top v_i/t}}{\sum_j e^{u_j^\top v_i/t}}
    """
    logits = (u @ v.transpose(1, 2)) / t[:, None, None]
    positives = torch.diagonal(logits, dim1=1, dim2=2)
    rows, columns = torch.logsumexp(logits, dim=2), torch.logsumexp(logits, dim=1)
    return (rows + columns - 2 * positives).mean(1)


def _loss_gradient(u: torch.Tensor, v: torch.Tensor, t: torch.Tensor, b: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact gradients of :func:`sigmoid_loss_batch` in ``u`` and ``v``: ``G v`` and
    ``G^T u``, with ``G_ij = (t/N) sigma(t M_ij - b)`` off the diagonal and
    ``G_ii = -(t/N) sigma(b - t M_ii)``."""
    scale = (t / u.shape[1])[:, None, None]
    weights = torch.sigmoid(t[:, None, None] * (u @ v.transpose(1, 2)) - b[:, None, None])
    weights.diagonal(dim1=1, dim2=2).sub_(1.0)  # sigma(x) - 1 = -sigma(-x)
    weights.mul_(scale)
    return weights @ v, weights.transpose(1, 2) @ u


def normalized_positive(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The paper's ``s = (1 + mean_i u_i.v_i) / 2`` of each problem: shape ``(problems,)``."""
    return (1.0 + (u * v).sum(-1).mean(-1)) / 2.0


def _problems(ts: Sequence[float], bs: Sequence[float] | None, dtype: torch.dtype
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """``t`` and ``b`` as tensors (``b = t`` when ``bs`` is None), checked."""
    ts = [check_positive("t", value) for value in ts]
    if not ts:
        raise ValueError("ts must hold at least one temperature t, got none")
    bs = ts if bs is None else [check_real("b", value) for value in bs]
    if len(bs) != len(ts):
        raise ValueError(f"bs must hold one bias per temperature ({len(ts)}), got {len(bs)}")
    return torch.tensor(ts, dtype=dtype), torch.tensor(bs, dtype=dtype)


def free_sigmoid_runs(n: int, d: int, ts: Sequence[float], bs: Sequence[float] | None = None,
                      *, steps: int = 50_000, lr: float = 0.5, seed: int = 0,
                      dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Free unit embeddings optimized on the sigmoid loss, one problem per ``(t, b)``.

    The paper's protocol (Sec. 5.2): every ``u_i``, ``v_i`` drawn from ``N(0, I_d)`` and
    projected onto the sphere; then ``steps`` updates of plain gradient descent with learning
    rate ``lr`` on the exact gradient, both views at once, each followed by the projection
    back onto the sphere. ``bs`` defaults to ``b = t`` (the paper's Theorem 2 and Fig. 2).

    Returns ``(u, v)``, each of shape ``(len(ts), n, d)`` with unit rows. The starts come from
    one generator seeded with ``seed``, drawn for the whole batch (problem ``p``'s start depends
    on ``seed``, ``n``, ``d`` and ``p``, not on the other problems' ``t`` and ``b``).
    """
    n = check_count("n", n, minimum=2)
    d = check_count("d", d, minimum=1)
    steps = check_count("steps", steps, minimum=0)
    lr = check_positive("lr", lr)
    t, b = _problems(ts, bs, dtype)
    u, v = _unit_starts(len(t), n, d, seed, dtype)
    for _ in range(steps):
        grad_u, grad_v = _loss_gradient(u, v, t, b)
        u, v = normalize(u - lr * grad_u, dim=-1), normalize(v - lr * grad_v, dim=-1)
    return u, v


def _unit_starts(problems: int, n: int, d: int, seed: int, dtype: torch.dtype
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """The starts of the free-embedding runs: ``u`` then ``v``, each ``(problems, n, d)`` drawn
    from ``N(0, I_d)`` by one generator seeded with ``seed`` and projected onto the sphere (the
    same for the sigmoid and the InfoNCE runs)."""
    generator = torch.Generator().manual_seed(int(seed))
    u, v = (normalize(torch.randn(problems, n, d, generator=generator, dtype=dtype), dim=-1)
            for _ in range(2))
    return u, v


def free_infonce_runs(n: int, d: int, ts: Sequence[float], *, steps: int = 50_000,
                      lr: float = 0.5, seed: int = 0, dtype: torch.dtype = torch.float64
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Free unit embeddings optimized on the InfoNCE loss (:func:`infonce_loss_batch`), one
    problem per temperature ``t``: the protocol of :func:`free_sigmoid_runs` (the same starts
    for the same ``seed``, ``n``, ``d`` and number of problems; plain gradient descent, each
    step projected back onto the sphere), the gradient by autograd, and each problem's step
    ``lr * t * n``: the loss's gradient in one embedding scales as ``1/(t n)``, so a step of
    ``lr`` alone would crawl at large ``t`` and ``n``.

    Returns ``(u, v)``, each of shape ``(len(ts), n, d)`` with unit rows.
    """
    n = check_count("n", n, minimum=2)
    d = check_count("d", d, minimum=1)
    steps = check_count("steps", steps, minimum=0)
    lr = check_positive("lr", lr)
    t, _ = _problems(ts, None, dtype)
    u, v = _unit_starts(len(t), n, d, seed, dtype)
    step = (lr * t * n)[:, None, None]
    for _ in range(steps):
        u, v = u.requires_grad_(), v.requires_grad_()
        grad_u, grad_v = torch.autograd.grad(infonce_loss_batch(u, v, t).sum(), (u, v))
        with torch.no_grad():
            u, v = normalize(u - step * grad_u, dim=-1), normalize(v - step * grad_v, dim=-1)
    return u.detach(), v.detach()


def etf_deviation(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """How far each problem's embeddings are from one simplex ETF shared by both views: the
    largest entry of ``|U U^T - G|``, ``|V V^T - G|`` and ``|U V^T - G|``, ``G`` having 1 on
    the diagonal and ``-1/(N-1)`` off it (0 exactly when ``u_i = v_i`` form the ETF of
    Definition 1): shape ``(problems,)``."""
    n = u.shape[1]
    gram = torch.full((n, n), -1.0 / (n - 1), dtype=u.dtype)
    gram.fill_diagonal_(1.0)
    return torch.stack([(a @ b.transpose(1, 2) - gram).abs().amax((1, 2))
                        for a, b in ((u, u), (v, v), (u, v))]).amax(0)


class _Encoders:
    """One two-layer ReLU network ``x -> normalize(W2 relu(W1 x + c1) + c2)`` per problem,
    the weights of all problems stacked (``W1``: ``(problems, d_in, hidden)``), initialized as
    ``torch.nn.Linear`` does (uniform in ``+-1/sqrt(fan_in)``)."""

    def __init__(self, problems: int, d_in: int, hidden: int, d_out: int,
                 generator: torch.Generator, dtype: torch.dtype):
        def uniform(*shape, fan_in):
            bound = 1.0 / math.sqrt(fan_in)
            weights = torch.rand(problems, *shape, generator=generator, dtype=dtype)
            return ((2 * weights - 1) * bound).requires_grad_()

        self.parameters = [uniform(d_in, hidden, fan_in=d_in), uniform(1, hidden, fan_in=d_in),
                           uniform(hidden, d_out, fan_in=hidden),
                           uniform(1, d_out, fan_in=hidden)]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        w1, c1, w2, c2 = self.parameters
        return normalize(torch.relu(x @ w1 + c1) @ w2 + c2, dim=-1)


def encoder_sigmoid_runs(n: int, d: int, ts: Sequence[float], bs: Sequence[float] | None = None,
                         *, hidden: int = 128, steps: int = 5_000, lr: float = 0.01,
                         seed: int = 0, dtype: torch.dtype = torch.float64
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """A two-layer ReLU encoder trained on the sigmoid loss, one problem per ``(t, b)``.

    The paper's Fig. 3 setting: ``n`` pairs ``(x_i, y_i)`` drawn independently from
    ``N(0, I_{2d})``, one encoder ``f: R^{2d} -> S^{d-1}`` (a hidden ReLU layer of ``hidden``
    units, L2-normalized output) applied to both views, ``u_i = f(x_i)``, ``v_i = f(y_i)``. The
    paper leaves the width, optimizer, learning rate and steps open: Adam with ``lr`` for
    ``steps`` full-batch steps here. Each problem has its own inputs and weights; Adam acts
    elementwise, so training the stacked weights together is training each problem alone.

    Returns the final ``(u, v)``, each ``(len(ts), n, d)`` with unit rows (no gradient).
    """
    n = check_count("n", n, minimum=2)
    d = check_count("d", d, minimum=1)
    hidden = check_count("hidden", hidden, minimum=1)
    steps = check_count("steps", steps, minimum=0)
    lr = check_positive("lr", lr)
    t, b = _problems(ts, bs, dtype)
    generator = torch.Generator().manual_seed(int(seed))
    x, y = (torch.randn(len(t), n, 2 * d, generator=generator, dtype=dtype) for _ in range(2))
    encoders = _Encoders(len(t), 2 * d, hidden, d, generator, dtype)
    optimizer = torch.optim.Adam(encoders.parameters, lr=lr)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        sigmoid_loss_batch(encoders(x), encoders(y), t, b).sum().backward()
        optimizer.step()
    with torch.no_grad():
        return encoders(x), encoders(y)

