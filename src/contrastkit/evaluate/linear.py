"""The linear probe on precomputed frozen features: multinomial logistic regression solved
exactly (the default), or the paper's App. D minibatch SGD.

Features are L2-normalized in both cases. Training on precomputed features is exact for a
frozen backbone evaluated without augmentation.

- ``solver="lbfgs"`` (default): the convex problem

      min over W, b of  (1 / N) sum_i CE(W x_i + b, y_i)  +  (l2_penalty / 2) ||W||_F^2

  (softmax cross-entropy with a bias; the weights penalized, the bias not), solved to
  convergence in float64 by full-batch L-BFGS (``torch.optim.LBFGS``, strong-Wolfe line
  search) from zero, until the largest entry of the objective's gradient is at most
  ``tolerance`` or after ``max_iter`` iterations. Deterministic: no initialization, no
  shuffling, no seed. The default penalty, :data:`L2_PENALTY` = 5e-5, is the one the paper's
  own probe amounts to at the paper's scale (see :data:`L2_PENALTY`).
- ``solver="sgd"``: the central paper's App. D protocol (Lee, Lim, Lee, Sohn, ICML 2025,
  arXiv:2506.09781): a ``Linear(d, C)`` trained for ``epochs`` epochs of minibatch SGD (lr
  0.1, momentum 0.9, no weight decay, batch 256, cosine decay) on the cross-entropy, seeded;
  bit for bit what this module did before the L-BFGS solver was added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from contrastkit.checks.scalars import check_choice, check_count, check_nonnegative, check_positive
from contrastkit.checks.tensors import check_finite_tensor
from contrastkit.rows import unit_rows

from .metrics import topk_accuracy

EpochCallback = Callable[[int, float], None]

SOLVERS = ("lbfgs", "sgd")

#: The L-BFGS probe's default penalty (on the mean cross-entropy): what the paper's App. D
#: probe amounts to on the paper's data. That probe is 200 epochs of SGD (lr 0.1, batch 256,
#: no weight decay; momentum 0.9 and cosine decay as in the authors' code) on CIFAR's 50 000
#: training images: 39 200 steps (:data:`PAPER_PROBE_STEPS`). Gradient descent from zero
#: stopped at time ``tau`` is close to the ridge solution of penalty ``1 / tau``
#: (eigendirection by eigendirection, the factors ``1 - exp(-s tau)`` and
#: ``s tau / (1 + s tau)`` of curvature ``s``), and this schedule's time is
#: ``tau = lr * steps / (2 (1 - momentum))`` (cosine: half the peak rate on average; momentum
#: 0.9: ten times each step), about 19 600 for 39 200 steps, hence a penalty of about 5e-5. On
#: our CPU datasets (1 437 to 4 000 training images) 200 epochs are 1 200 to 3 200 steps, a
#: penalty 12 to 33 times larger, and 100 epochs (what ``evaluate_run`` ran before) twice that:
#: they under-fit the features by up to 20 points of accuracy. 5e-5 keeps the paper's probe at
#: any size. Measured (``benchmarks/linear_probe.py``, docs/benchmarks.md): this probe agrees
#: with SGD run for the paper's 39 200 steps to within half a point of top-1.
L2_PENALTY = 5e-5
#: The paper's probe in optimizer steps: 200 epochs of batches of 256 over 50 000 images.
PAPER_PROBE_STEPS = 200 * -(-50_000 // 256)

# the largest entry of the penalized objective's gradient at which L-BFGS stops
TOLERANCE = 1e-7

# L-BFGS iterations at most
MAX_ITER = 1000

# L-BFGS's memory (pairs of steps and gradient changes) and line-search evaluations per step
_HISTORY = 50
_LINE_SEARCH_EVALUATIONS = 25


def train_linear_classifier(features: torch.Tensor, labels: torch.Tensor, num_classes: int,
                            epochs: int = 100, lr: float = 0.1, batch_size: int = 256,
                            momentum: float = 0.9, seed: int = 0,
                            on_epoch: EpochCallback | None = None, solver: str = "lbfgs",
                            l2_penalty: float | None = None, tolerance: float = TOLERANCE,
                            max_iter: int = MAX_ITER) -> torch.nn.Linear:
    """A ``Linear(d, num_classes)`` fitted to L2-normalized ``features`` (see the module's
    docstring for the two solvers).

    ``solver="lbfgs"``: the minimizer of the penalized cross-entropy (``l2_penalty``, by
    default :data:`L2_PENALTY`; ``tolerance``, ``max_iter``), returned in
    float64 when ``features`` are float64 and in float32 otherwise; the bias has zero mean
    over the classes (the cross-entropy does not see its mean). A class absent from
    ``labels`` gets weight 0 and bias ``-inf``, the limit its logit tends to. ``epochs``,
    ``lr``, ``batch_size``, ``momentum`` and ``seed`` are not used (but checked). After each
    iteration, ``on_epoch(iteration, cross_entropy)`` when given (the training
    cross-entropy, without the penalty).

    ``solver="sgd"``: the App. D protocol, in float32 (``l2_penalty``, ``tolerance`` and
    ``max_iter`` not used); after each epoch, ``on_epoch(epoch, mean_loss)`` when given (the
    epoch's mean training cross-entropy).

    Raises ``ValueError`` naming the argument when one is malformed.
    """
    _check_data("features", features, "labels", labels, num_classes)
    solver = _check_settings(epochs, lr, batch_size, momentum, solver, l2_penalty, tolerance,
                             max_iter)
    if solver == "sgd":
        return _fit_sgd(features, labels, num_classes, epochs, lr, batch_size, momentum, seed,
                        on_epoch)
    if l2_penalty is None:
        l2_penalty = L2_PENALTY
    return _fit_lbfgs(features, labels, num_classes, l2_penalty, tolerance, max_iter, on_epoch)


def linear_probe(train_features: torch.Tensor, train_labels: torch.Tensor,
                 test_features: torch.Tensor, test_labels: torch.Tensor, num_classes: int,
                 epochs: int = 100, lr: float = 0.1, batch_size: int = 256,
                 seed: int = 0, on_epoch: EpochCallback | None = None, solver: str = "lbfgs",
                 l2_penalty: float | None = None, tolerance: float = TOLERANCE,
                 max_iter: int = MAX_ITER) -> dict[str, float]:
    """Top-1 and top-5 test accuracy (in %) of a linear classifier trained on frozen,
    L2-normalized training features (the arguments as in :func:`train_linear_classifier`)."""
    _check_data("train_features", train_features, "train_labels", train_labels, num_classes)
    _check_data("test_features", test_features, "test_labels", test_labels, num_classes)
    if test_features.shape[1] != train_features.shape[1]:
        raise ValueError(f"test_features must have {train_features.shape[1]} columns (as "
                         f"train_features), got {test_features.shape[1]}")
    classifier = train_linear_classifier(train_features, train_labels, num_classes, epochs, lr,
                                         batch_size, seed=seed, on_epoch=on_epoch,
                                         solver=solver, l2_penalty=l2_penalty,
                                         tolerance=tolerance, max_iter=max_iter)
    with torch.no_grad():
        scores = classifier(unit_rows(test_features.to(classifier.weight.dtype)))
    return topk_accuracy(scores, test_labels)


def _check_data(features_name: str, features: torch.Tensor, labels_name: str,
                labels: torch.Tensor,
                num_classes: int) -> None:
    """``features`` a finite real ``(N, d)`` tensor, ``labels`` ``N`` class ids below
    ``num_classes``."""
    check_count("num_classes", num_classes, 1)
    for name, value in ((features_name, features), (labels_name, labels)):
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if labels.ndim != 1 or labels.is_floating_point() or labels.is_complex():
        raise ValueError(f"{labels_name} must be a 1-D tensor of integer class ids, got "
                         f"dtype {labels.dtype} and shape {tuple(labels.shape)}")
    if features.ndim != 2 or features.shape[0] != labels.shape[0]:
        raise ValueError(f"{features_name} must be (N, d) with N = len({labels_name}) = "
                         f"{labels.shape[0]}, got {tuple(features.shape)}")
    if features.shape[0] == 0 or features.shape[1] == 0:
        raise ValueError(f"{features_name} must have at least one row and one column, got "
                         f"{tuple(features.shape)}")
    if features.is_complex():
        raise ValueError(f"{features_name} must be real, got dtype {features.dtype}")
    if features.is_floating_point():
        check_finite_tensor(features_name, features)
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= num_classes:
        raise ValueError(f"{labels_name} must lie in [0, num_classes) = [0, {num_classes}), "
                         f"got values from {low} to {high}")


def _check_settings(epochs: int, lr: float, batch_size: int, momentum: float, solver: str,
                    l2_penalty: float | None, tolerance: float, max_iter: int) -> str:
    check_count("epochs", epochs, 1)
    check_positive("lr", lr)
    check_count("batch_size", batch_size, 1)
    check_nonnegative("momentum", momentum)
    if l2_penalty is not None:
        check_positive("l2_penalty", l2_penalty)
    check_positive("tolerance", tolerance)
    check_count("max_iter", max_iter, 1)
    return check_choice("solver", solver, SOLVERS)


def _fit_sgd(features: torch.Tensor, labels: torch.Tensor, num_classes: int, epochs: int,
             lr: float, batch_size: int, momentum: float, seed: int,
             on_epoch: EpochCallback | None) -> torch.nn.Linear:
    """The App. D protocol (unchanged, bit for bit)."""
    generator = torch.Generator().manual_seed(seed)
    inputs = unit_rows(features.float())
    classifier = torch.nn.Linear(inputs.shape[1], num_classes)
    with torch.no_grad():
        bound = inputs.shape[1] ** -0.5
        classifier.weight.uniform_(-bound, bound, generator=generator)
        classifier.bias.zero_()
    optimizer = torch.optim.SGD(classifier.parameters(), lr=lr, momentum=momentum,
                                weight_decay=0.0)
    steps_per_epoch = -(-inputs.shape[0] // batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs * steps_per_epoch)
    for epoch in range(epochs):
        order = torch.randperm(inputs.shape[0], generator=generator)
        loss_sum = torch.zeros(())
        for start in range(0, inputs.shape[0], batch_size):
            batch = order[start:start + batch_size]
            loss = F.cross_entropy(classifier(inputs[batch]), labels[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            loss_sum += loss.detach() * len(batch)
        if on_epoch is not None:
            on_epoch(epoch, loss_sum.item() / inputs.shape[0])
    return classifier


def _fit_lbfgs(features: torch.Tensor, labels: torch.Tensor, num_classes: int,
               l2_penalty: float, tolerance: float, max_iter: int,
               on_epoch: EpochCallback | None) -> torch.nn.Linear:
    """The penalized multinomial logistic regression, solved by full-batch L-BFGS in float64.

    Only the classes present in ``labels`` are fitted (an absent class's bias has no finite
    optimum); L-BFGS runs one iteration per ``step`` call, its state carried over, so that
    each iteration can be reported; the objective and its gradient are written out (two
    products with the features) and memoized on the exact parameter values, so that the
    evaluation which opens each ``step`` reuses the line search's last one."""
    inputs = unit_rows(features.to(torch.float64))
    labels = labels.to(device=inputs.device, dtype=torch.int64)
    present = torch.bincount(labels, minlength=num_classes) > 0
    targets = (present.cumsum(0) - 1)[labels]  # class ids among the present classes
    classes = int(present.sum())
    rows = inputs.shape[0]
    weight = torch.zeros(classes, inputs.shape[1], dtype=torch.float64, device=inputs.device,
                         requires_grad=True)
    bias = torch.zeros(classes, dtype=torch.float64, device=inputs.device, requires_grad=True)
    memo: dict[str, Any] = {}  # the last point evaluated: its objective and gradients

    def evaluate() -> float:
        """The objective at the current parameters, their gradients set; memoized."""
        point = torch.cat([weight.detach().flatten(), bias.detach()])
        if "point" in memo and torch.equal(point, memo["point"]):
            weight.grad, bias.grad = memo["weight_grad"].clone(), memo["bias_grad"].clone()
            return memo["objective"]
        with torch.no_grad():
            logits = torch.addmm(bias, inputs, weight.T)
            log_probabilities = torch.log_softmax(logits, dim=1)
            cross_entropy = -log_probabilities.gather(1, targets[:, None]).mean()
            objective = cross_entropy + 0.5 * l2_penalty * weight.square().sum()
            residual = log_probabilities.exp_()
            residual[torch.arange(rows, device=inputs.device), targets] -= 1.0
            residual /= rows
            weight_grad = torch.addmm(weight, residual.T, inputs, beta=l2_penalty)
            bias_grad = residual.sum(0)
        memo.update(point=point, objective=objective.item(), cross_entropy=cross_entropy.item(),
                    weight_grad=weight_grad, bias_grad=bias_grad,
                    gradient_max=max(weight_grad.abs().max().item(),
                                     bias_grad.abs().max().item()))
        weight.grad, bias.grad = weight_grad.clone(), bias_grad.clone()
        return memo["objective"]

    optimizer = torch.optim.LBFGS([weight, bias], lr=1.0, max_iter=1,
                                  max_eval=1 + _LINE_SEARCH_EVALUATIONS,
                                  tolerance_grad=tolerance, tolerance_change=0.0,
                                  history_size=_HISTORY, line_search_fn="strong_wolfe")
    for iteration in range(max_iter):
        evaluate()
        if memo["gradient_max"] <= tolerance:
            break
        before = memo["point"]
        optimizer.step(evaluate)
        evaluate()
        if on_epoch is not None:
            on_epoch(iteration, memo["cross_entropy"])
        if torch.equal(memo["point"], before):  # the line search found no decrease
            break

    dtype = torch.float64 if features.dtype == torch.float64 else torch.float32
    classifier = torch.nn.Linear(inputs.shape[1], num_classes, device=inputs.device,
                                 dtype=dtype)
    with torch.no_grad():
        classifier.weight.zero_()
        classifier.bias.fill_(-torch.inf)
        classifier.weight[present] = weight.to(dtype)
        classifier.bias[present] = (bias - bias.mean()).to(dtype)
    return classifier
