"""optimizer=adamw: decoupled weight decay on weight matrices only, PyTorch's AdamW step, and its
settings checked like every other config key."""

import pytest
import torch

from contrastkit.train import PretrainConfig, build_optimizer, load_checkpoint, pretrain
from tests.train.tiny import tiny_config


def small_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                               torch.nn.Linear(4, 2)).double()


def test_adamw_decays_weight_matrices_and_not_biases_or_norm_weights():
    model = small_model()
    optimizer = build_optimizer("adamw", model, lr=0.1, momentum=0.9, weight_decay=0.05,
                                betas=(0.8, 0.99), eps=1e-6)
    assert isinstance(optimizer, torch.optim.AdamW)
    decayed, kept = optimizer.param_groups
    matrices = {id(model[0].weight), id(model[2].weight)}
    assert {id(p) for p in decayed["params"]} == matrices
    assert {id(p) for p in kept["params"]} == {id(p) for p in model.parameters()} - matrices
    assert (decayed["weight_decay"], kept["weight_decay"]) == (0.05, 0.0)
    assert decayed["betas"] == (0.8, 0.99) and decayed["eps"] == 1e-6


def test_one_adamw_step_is_the_decoupled_adam_update():
    """First step: m_hat = g, v_hat = g^2, so w <- w (1 - lr wd) - lr g / (|g| + eps) for the
    weight matrices and w <- w - lr g / (|g| + eps) for the rest."""
    model = small_model()
    generator = torch.Generator().manual_seed(1)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=generator, dtype=torch.float64)
    before = [p.detach().clone() for p in model.parameters()]
    lr, decay, eps = 0.1, 0.05, 1e-6
    build_optimizer("adamw", model, lr, 0.9, decay, (0.8, 0.99), eps).step()
    for p, w in zip(model.parameters(), before, strict=True):
        shrink = 1 - lr * decay if p.ndim > 1 else 1.0
        expected = w * shrink - lr * p.grad / (p.grad.abs() + eps)
        torch.testing.assert_close(p.detach(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("settings, fragments", [
    ({"optimizer": "adamw", "momentum": 0.5}, ("momentum=0.5", "ignored", "adamw_beta1")),
    ({"adamw_beta2": 0.9}, ("adamw_beta2=0.9", "ignored", "optimizer=sgd")),
    ({"optimizer": "adamw", "adamw_beta1": 1.0}, ("adamw_beta1", "[0, 1)")),
    ({"optimizer": "adamw", "adamw_eps": 0.0}, ("adamw_eps", "> 0")),
    ({"optimizer": "adam"}, ("optimizer", "adamw")),
])
def test_bad_or_unused_optimizer_settings_are_named(settings, fragments):
    with pytest.raises(ValueError) as error:
        PretrainConfig(**settings)
    for fragment in fragments:
        assert fragment in str(error.value)


def test_a_run_trains_and_checkpoints_with_adamw(tmp_path):
    config = tiny_config(tmp_path, optimizer="adamw", base_lr=0.004, epochs=1)
    result = pretrain(config)
    state = load_checkpoint(result.run_dir)["optimizer"]["state"]
    assert state and all("exp_avg_sq" in entry for entry in state.values())
    assert torch.isfinite(torch.tensor(result.history[-1]["loss"]))
