"""LARS scales each weight matrix's step by its trust ratio; biases take plain SGD steps."""

import torch

from contrastkit.train import LARS


def test_first_lars_step_follows_the_trust_ratio_formula():
    generator = torch.Generator().manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(4, 3, generator=generator, dtype=torch.float64))
    bias = torch.nn.Parameter(torch.randn(4, generator=generator, dtype=torch.float64))
    weight.grad = torch.randn(4, 3, generator=generator, dtype=torch.float64)
    bias.grad = torch.randn(4, generator=generator, dtype=torch.float64)
    w0, b0 = weight.detach().clone(), bias.detach().clone()
    LARS([weight, bias], lr=0.5, momentum=0.9, weight_decay=0.01, eta=0.02).step()
    direction = weight.grad + 0.01 * w0
    trust = 0.02 * w0.norm() / direction.norm()
    assert torch.allclose(weight.detach(), w0 - 0.5 * trust * direction)
    assert torch.allclose(bias.detach(), b0 - 0.5 * bias.grad)
