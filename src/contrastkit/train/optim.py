"""Optimizer and learning-rate schedule of the paper's App. D: SGD with momentum 0.9 and
weight decay 1e-4 (or LARS, or AdamW), lr = base x B / 256, linear warm-up then cosine decay.

A loss's learned scalars (``learn_temperature``: a temperature, SigLIP's scale and bias) join
the optimizer as a group of their own (:func:`scalar_group`): no weight decay and no trust
ratio, and in the sgd and lars runs Adam steps at an Adam learning rate, as the CLIP and
SigLIP trainers (Adam, AdamW) optimize them. A plain SGD step on a log scale moves it by ``lr``
times a gradient that grows with the scale and the batch (tens on digits at scale 10), which
with momentum 0.9 and the SGD lr threw SigLIP's scale from 10 to 1e-7 within an epoch; a scale
that small has no gradient left (it is ``scale`` times that of the scale), so it never came back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

if TYPE_CHECKING:
    from torch.optim.optimizer import ParamsT


class WarmupCosine:
    """Multiplier of the peak lr at optimizer step ``step``: linear from ``1/warmup`` to 1 over
    the ``warmup`` first steps, then cosine down to 0 at ``total`` steps."""

    def __init__(self, warmup: int, total: int) -> None:
        if total < 1 or not 0 <= warmup <= total:
            raise ValueError(f"need 0 <= warmup <= total and total >= 1, got {warmup}, {total}")
        self.warmup = warmup
        self.total = total

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        progress = (step - self.warmup) / max(1, self.total - self.warmup)
        return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


#: Adam's moment decays and eps for the loss's scalars in the sgd and lars runs: PyTorch's
#: defaults, those of ``optimizer=adamw`` (CLIP used beta2 = 0.98 at its far longer runs).
SCALAR_BETAS = (0.9, 0.999)
SCALAR_EPS = 1e-8
#: The scalars' Adam lr relative to the model's SGD/LARS lr: the default AdamW base lr over
#: the default SGD base lr (1e-3 / 0.3, both per 256 samples), so at the default settings they
#: take the lr an AdamW run of that batch size gives them, and a changed ``base_lr`` scales both.
SCALAR_LR_RATIO = 1e-3 / 0.3


def _evaluate(closure: Callable[[], float] | None) -> float | None:
    """The loss that an optimizer's ``closure`` recomputes (with gradients), or ``None``."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


class _ScalarGroups(torch.optim.Optimizer):
    """A mixin for the plain-gradient optimizers (:class:`SGD`, :class:`LARS`): a param group
    with ``adam=True`` (:func:`scalar_group`) takes bias-corrected Adam steps (no weight decay,
    no trust ratio) with the group's ``lr``, ``betas`` and ``eps``; its state is ``step``,
    ``exp_avg`` and ``exp_avg_sq`` per parameter. The flag survives loading a checkpoint whose
    groups lack it (an earlier version's), so such a run resumes with Adam steps too."""

    scalar_lr: float

    @torch.no_grad()
    def _adam_steps(self) -> None:
        for group in self.param_groups:
            if not group.get("adam"):
                continue
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "exp_avg" not in state:
                    state.clear()  # an earlier version's momentum buffer
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                step = state["step"]
                state["exp_avg"].mul_(beta1).add_(p.grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denominator = (state["exp_avg_sq"] / (1 - beta2 ** step)).sqrt_().add_(
                    group["eps"])
                p.addcdiv_(state["exp_avg"], denominator,
                           value=-group["lr"] / (1 - beta1 ** step))

    def load_state_dict(self, state_dict: dict) -> None:
        flags: list[dict[str, Any]] = [
            {key: group[key] for key in ("adam", "betas", "eps") if key in group}
            for group in self.param_groups]
        super().load_state_dict(state_dict)
        for group, flag in zip(self.param_groups, flags, strict=True):
            group.update(flag)


class SGD(_ScalarGroups, torch.optim.SGD):
    """PyTorch's SGD (momentum, weight decay on every parameter of its groups), except for a
    group with ``adam=True`` (:func:`scalar_group`), which takes Adam steps."""

    def __init__(self, params: ParamsT, lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
        self.scalar_lr = lr * SCALAR_LR_RATIO

    @torch.no_grad()
    # torch types step as overloads on closure; the loss of a closure, else None, as its own
    def step(self,  # type: ignore[override]
             closure: Callable[[], float] | None = None) -> float | None:
        loss = _evaluate(closure)
        groups = self.param_groups
        self.param_groups = [group for group in groups if not group.get("adam")]
        try:
            super().step()
        finally:
            self.param_groups = groups
        self._adam_steps()
        return loss


class LARS(_ScalarGroups, torch.optim.Optimizer):
    """SGD with momentum and layer-wise adaptive rate scaling (You et al., 2017).

    For each parameter with ``ndim > 1`` the update is scaled by the trust ratio
    ``eta * ||w|| / (||g|| + weight_decay * ||w||)``; biases and normalization weights
    (``ndim <= 1``) get neither weight decay nor adaptation, as in SimCLR. A group with
    ``adam=True`` (the loss's scalars, :func:`scalar_group`) takes Adam steps instead.
    """

    def __init__(self, params: ParamsT, lr: float, momentum: float = 0.9,
                 weight_decay: float = 0.0, eta: float = 0.02) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum,
                                  "weight_decay": weight_decay, "eta": eta})
        self.scalar_lr = lr * SCALAR_LR_RATIO

    @torch.no_grad()
    # torch types step as overloads on closure; the loss of a closure, else None, as its own
    def step(self,  # type: ignore[override]
             closure: Callable[[], float] | None = None) -> float | None:
        loss = _evaluate(closure)
        self._adam_steps()
        for group in self.param_groups:
            if group.get("adam"):
                continue
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if p.ndim > 1:
                    grad = grad.add(p, alpha=group["weight_decay"])
                    weight_norm, grad_norm = p.norm(), grad.norm()
                    trust = torch.where(
                        (weight_norm > 0) & (grad_norm > 0),
                        group["eta"] * weight_norm / grad_norm, torch.ones_like(weight_norm))
                    grad = grad.mul(trust)
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = grad.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(grad)
                p.add_(state["momentum_buffer"], alpha=-group["lr"])
        return loss


def build_optimizer(name: str, model: nn.Module, lr: float, momentum: float,
                    weight_decay: float, betas: tuple[float, float] = (0.9, 0.999),
                    eps: float = 1e-8) -> torch.optim.Optimizer:
    """``"sgd"`` (momentum, weight decay on every parameter, as in the authors' configs),
    ``"lars"`` or ``"adamw"`` (Loshchilov & Hutter's decoupled weight decay, with ``betas``
    and ``eps``; no decay on biases and normalization weights, see :func:`decay_groups`)."""
    if name == "sgd":
        return SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    if name == "lars":
        return LARS(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(decay_groups(model, weight_decay), lr=lr, betas=betas,
                                 eps=eps)
    raise ValueError(f"optimizer must be 'sgd', 'lars' or 'adamw', got {name!r}")


def scalar_group(optimizer: torch.optim.Optimizer, parameters: list[torch.nn.Parameter]
                 ) -> dict:
    """The param group of a loss's learned scalars (a temperature, SigLIP's scale and bias) for
    ``optimizer``, treated as CLIP's and SigLIP's trainers treat them: no weight decay, no
    trust ratio (LARS), and Adam steps. In an AdamW run that is a group without decay at the
    model's lr (CLIP's choice); in the sgd and lars runs a group with ``adam=True``, which
    their :class:`SGD` and :class:`LARS` step with Adam at ``optimizer.scalar_lr`` (the
    model's lr times :data:`SCALAR_LR_RATIO`)."""
    group = {"params": list(parameters), "weight_decay": 0.0}
    if isinstance(optimizer, _ScalarGroups):
        group.update(adam=True, lr=optimizer.scalar_lr, betas=SCALAR_BETAS, eps=SCALAR_EPS)
    return group


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two parameter groups of ``model``'s trainable parameters: the weight matrices and
    convolution kernels (``ndim > 1``) with ``weight_decay``, then the biases and
    normalization weights (``ndim <= 1``) without, as :class:`LARS` and common practice do
    (decaying a BatchNorm scale or a bias only shrinks the features it shifts or scales)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    return [{"params": [p for p in trainable if p.ndim > 1], "weight_decay": weight_decay},
            {"params": [p for p in trainable if p.ndim <= 1], "weight_decay": 0.0}]


def build_scheduler(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int
                    ) -> LambdaLR:
    """A ``LambdaLR`` stepping once per optimizer step with :class:`WarmupCosine`."""
    return LambdaLR(optimizer, WarmupCosine(warmup_steps, total_steps))


def resume_scheduler(scheduler: LambdaLR, state: dict) -> None:
    """Continue ``scheduler`` (from :func:`build_scheduler`) at the step count saved in
    ``state``, on its own schedule: a run resumed with more ``epochs`` follows the warm-up
    and cosine of the new length from the step it has reached. The optimizer's lr is set to
    the schedule's value at that step (for an unchanged run, the value it had)."""
    state = {key: value for key, value in state.items() if key != "lr_lambdas"}
    state["lr_lambdas"] = [None] * len(scheduler.lr_lambdas)  # keep this schedule's own
    scheduler.load_state_dict(state)
    lrs = [base * schedule(scheduler.last_epoch)
           for base, schedule in zip(scheduler.base_lrs, scheduler.lr_lambdas, strict=True)]
    for group, lr in zip(scheduler.optimizer.param_groups, lrs, strict=True):
        group["lr"] = lr
    scheduler._last_lr = lrs
