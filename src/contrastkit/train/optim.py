"""Optimizer and learning-rate schedule of the paper's App. D: SGD with momentum 0.9 and
weight decay 1e-4 (or LARS, or AdamW), lr = base x B / 256, linear warm-up then cosine decay."""

from __future__ import annotations

import math

import torch
from torch import nn


class WarmupCosine:
    """Multiplier of the peak lr at optimizer step ``step``: linear from ``1/warmup`` to 1 over
    the ``warmup`` first steps, then cosine down to 0 at ``total`` steps."""

    def __init__(self, warmup: int, total: int):
        if total < 1 or not 0 <= warmup <= total:
            raise ValueError(f"need 0 <= warmup <= total and total >= 1, got {warmup}, {total}")
        self.warmup = warmup
        self.total = total

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        progress = (step - self.warmup) / max(1, self.total - self.warmup)
        return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


class LARS(torch.optim.Optimizer):
    """SGD with momentum and layer-wise adaptive rate scaling (You et al., 2017).

    For each parameter with ``ndim > 1`` the update is scaled by the trust ratio
    ``eta * ||w|| / (||g|| + weight_decay * ||w||)``; biases and normalization weights
    (``ndim <= 1``) get neither weight decay nor adaptation, as in SimCLR.
    """

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0,
                 eta: float = 0.02):
        super().__init__(params, {"lr": lr, "momentum": momentum,
                                  "weight_decay": weight_decay, "eta": eta})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
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
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum,
                               weight_decay=weight_decay)
    if name == "lars":
        return LARS(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(decay_groups(model, weight_decay), lr=lr, betas=betas,
                                 eps=eps)
    raise ValueError(f"optimizer must be 'sgd', 'lars' or 'adamw', got {name!r}")


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two parameter groups of ``model``'s trainable parameters: the weight matrices and
    convolution kernels (``ndim > 1``) with ``weight_decay``, then the biases and
    normalization weights (``ndim <= 1``) without, as :class:`LARS` and common practice do
    (decaying a BatchNorm scale or a bias only shrinks the features it shifts or scales)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    return [{"params": [p for p in trainable if p.ndim > 1], "weight_decay": weight_decay},
            {"params": [p for p in trainable if p.ndim <= 1], "weight_decay": 0.0}]


def build_scheduler(optimizer, warmup_steps: int, total_steps: int):
    """A ``LambdaLR`` stepping once per optimizer step with :class:`WarmupCosine`."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, WarmupCosine(warmup_steps, total_steps))


def resume_scheduler(scheduler, state: dict) -> None:
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
