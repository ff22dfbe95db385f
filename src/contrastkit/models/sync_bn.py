"""Batch normalization over the global batch under DDP, on any device.

PyTorch's ``nn.SyncBatchNorm`` runs on GPUs only. :class:`GlobalBatchNorm` gathers the
activations of every process with :func:`contrastkit.distributed.gather` (differentiable) and
normalizes with the statistics of the global batch, so a 2-process CPU run computes what one
process computes on the whole batch. It gathers whole activations, so on GPUs
:func:`convert_to_global_batch_norm` uses ``nn.SyncBatchNorm`` instead.
"""

from __future__ import annotations

import torch
from torch import nn

from contrastkit.distributed import gather, is_distributed


class GlobalBatchNorm(nn.modules.batchnorm._BatchNorm):
    """BatchNorm1d/2d whose training statistics are taken over all processes' batches."""

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() not in (2, 4):
            raise ValueError(f"input must be 2-D or 4-D, got {input.dim()}-D")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not (self.training and is_distributed()):
            return super().forward(input)
        dims = [0] + list(range(2, input.dim()))
        everything = gather(input)
        mean = everything.mean(dim=dims)
        var = everything.var(dim=dims, correction=0)
        # running statistics with a momentum: what the update below reads (without them it
        # fails, as before these asserts; BatchNorm's cumulative average is not implemented)
        assert self.running_mean is not None and self.running_var is not None
        assert self.num_batches_tracked is not None and self.momentum is not None
        with torch.no_grad():
            count = everything.numel() // everything.shape[1]
            self.num_batches_tracked += 1
            self.running_mean.lerp_(mean.detach(), self.momentum)
            self.running_var.lerp_(var.detach() * count / max(count - 1, 1), self.momentum)
        shape = [1, -1] + [1] * (input.dim() - 2)
        normalized = (input - mean.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)
        if self.affine:
            normalized = normalized * self.weight.view(shape) + self.bias.view(shape)
        return normalized


def convert_to_global_batch_norm(module: nn.Module, device: torch.device) -> nn.Module:
    """Replace every BatchNorm of ``module`` by one over the global batch (in place)."""
    if device.type == "cuda":
        return nn.SyncBatchNorm.convert_sync_batchnorm(module)
    for name, child in module.named_children():
        if isinstance(child, nn.modules.batchnorm._BatchNorm):
            replacement = GlobalBatchNorm(child.num_features, child.eps, child.momentum,
                                          child.affine, child.track_running_stats,
                                          **_device_and_dtype(child))
            replacement.load_state_dict(child.state_dict())
            setattr(module, name, replacement)
        else:
            convert_to_global_batch_norm(child, device)
    return module


def _device_and_dtype(module: nn.Module) -> dict:
    """The device and dtype of ``module``'s floating-point state (none if it has no state)."""
    for tensor in module.state_dict().values():
        if tensor.is_floating_point():
            return {"device": tensor.device, "dtype": tensor.dtype}
    return {}
