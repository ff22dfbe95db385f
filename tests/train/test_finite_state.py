"""The divergence check reads a model's state: its parameters and the buffers of its state_dict,
not the constants a model keeps as non-persistent buffers (open_clip's causal mask of -inf)."""

import math

import torch
from torch import nn

from contrastkit.train.stopping import all_finite, non_finite_part, state_buffers


class _Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm1d(3)
        self.register_buffer("attn_mask", torch.full((2, 2), -math.inf), persistent=False)


def test_a_non_persistent_constant_of_minus_infinity_is_not_divergence():
    model = _Masked()
    assert [name for name, _ in state_buffers(model)] == [
        "norm.running_mean", "norm.running_var", "norm.num_batches_tracked"]
    assert all_finite(1.0, model, torch.device("cpu"))


def test_a_non_finite_state_buffer_is_divergence_and_named():
    model = _Masked()
    model.norm.running_var[1] = math.nan
    assert not all_finite(1.0, model, torch.device("cpu"))
    assert non_finite_part(1.0, model, gradients=False) == "buffer norm.running_var"
