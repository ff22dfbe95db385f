"""Issue 28: the loss's learned scalars (SigLIP's scale and bias, a temperature) are trained as the
CLIP and SigLIP trainers train them, without weight decay, without LARS's trust ratio and with
Adam steps, also in the sgd and lars runs; a plain SGD step (lr 0.075, momentum 0.9) had thrown
``loss=siglip learn_temperature=true`` from scale 10 to 1e-7, where it stayed. The regime that
the trainer logs is the sigmoid theory's for the learned (t, b) and the batch (d >= N)."""

import math

import pytest
import torch

from contrastkit import losses
from contrastkit.theory import sigmoid_optimum
from contrastkit.train import LARS, build_optimizer, pretrain
from contrastkit.train.objective import add_loss_parameters, learned_metrics
from contrastkit.train.optim import SCALAR_BETAS, SCALAR_EPS, SCALAR_LR_RATIO
from tests.train.tiny import tiny_config

LR = 0.075  # the sgd default at batch 64: 0.3 * 64 / 256


def model_and_siglip():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).double()
    return model, losses.SigLIP(learnable=True).double()


@pytest.mark.parametrize("name", ["sgd", "lars"])
def test_sgd_and_lars_give_the_loss_scalars_an_adam_group_without_decay(name):
    model, siglip = model_and_siglip()
    optimizer = build_optimizer(name, model, LR, momentum=0.9, weight_decay=1e-4)
    add_loss_parameters(optimizer, siglip)
    group = optimizer.param_groups[-1]
    assert {id(p) for p in group["params"]} == {id(p) for p in siglip.parameters()}
    assert group["weight_decay"] == 0.0 and group["adam"] is True
    assert group["lr"] == LR * SCALAR_LR_RATIO == pytest.approx(2.5e-4, rel=1e-12)
    assert (group["betas"], group["eps"]) == (SCALAR_BETAS, SCALAR_EPS)
    assert not any(g.get("adam") for g in optimizer.param_groups[:-1])


@pytest.mark.parametrize("name", ["sgd", "lars"])
def test_a_huge_scalar_gradient_moves_the_scalars_by_the_adam_lr_only(name):
    """Adam's first step is ``lr * g / (|g| + eps)`` whatever ``|g|``: no trust ratio, no
    decay, no momentum of the SGD lr. The model's parameters take the optimizer's own step."""
    model, siglip = model_and_siglip()
    optimizer = build_optimizer(name, model, LR, momentum=0.9, weight_decay=1e-4)
    add_loss_parameters(optimizer, siglip)
    twin = list(model_and_siglip()[0].parameters())
    reference = (torch.optim.SGD if name == "sgd" else LARS)(twin, lr=LR, momentum=0.9,
                                                            weight_decay=1e-4)
    for p, q in zip(model.parameters(), twin, strict=True):
        p.grad = torch.full_like(p, 0.5)
        q.grad = torch.full_like(q, 0.5)
    siglip.logit_scale.grad = torch.tensor(30.0, dtype=torch.float64)
    siglip.logit_bias.grad = torch.tensor(-3.0, dtype=torch.float64)
    before = {key: float(value) for key, value in siglip.state_dict().items()}
    optimizer.step()
    reference.step()
    step = LR * SCALAR_LR_RATIO
    assert siglip.logit_scale.item() == pytest.approx(
        before["logit_scale"] - step * 30.0 / (30.0 + SCALAR_EPS), rel=0, abs=1e-15)
    assert siglip.logit_bias.item() == pytest.approx(
        before["logit_bias"] + step * 3.0 / (3.0 + SCALAR_EPS), rel=0, abs=1e-15)
    for p, q in zip(model.parameters(), twin, strict=True):
        assert torch.equal(p.detach(), q.detach())


def test_the_adam_flag_survives_a_checkpoint_without_it():
    """A checkpoint of an earlier version has the scalars' group without ``adam`` and with SGD's
    momentum buffers: the resumed optimizer keeps stepping them with Adam."""
    model, siglip = model_and_siglip()
    optimizer = build_optimizer("sgd", model, LR, momentum=0.9, weight_decay=1e-4)
    add_loss_parameters(optimizer, siglip)
    state = optimizer.state_dict()
    for key in ("adam", "betas", "eps"):
        del state["param_groups"][-1][key]
    scalar_ids = state["param_groups"][-1]["params"]
    for index in scalar_ids:
        state["state"][index] = {"momentum_buffer": torch.tensor(100.0, dtype=torch.float64)}
    optimizer.load_state_dict(state)
    assert optimizer.param_groups[-1]["adam"] is True
    siglip.logit_scale.grad = torch.tensor(1.0, dtype=torch.float64)
    siglip.logit_bias.grad = torch.tensor(1.0, dtype=torch.float64)
    before = siglip.logit_scale.item()
    optimizer.step()
    assert before - siglip.logit_scale.item() == pytest.approx(LR * SCALAR_LR_RATIO, rel=1e-6)


@pytest.fixture(scope="module")
def siglip_run(tmp_path_factory):
    """The documented ``loss=siglip vrns=0 learn_temperature=true`` (default sgd, lr 0.075 at
    batch 64, the default projector 512 -> 128) for 3 epochs of digits with a 1-epoch warm-up
    (66 steps, 44 past the warm-up), seeded. Before the fix its scale was 0.66 after the first
    epoch and 0.06 after the third, with the loss back at the constant-logit 5.17. The
    embedding dimension 128 is at least the batch's N = 64, where the theory holds."""
    config = tiny_config(tmp_path_factory.mktemp("siglip"), loss="siglip", vrns=0.0,
                         learn_temperature=True, batch_size=64, projector_hidden=512,
                         projector_out=128, epochs=3, warmup_epochs=1)
    return config, pretrain(config).history


def test_short_sgd_siglip_run_keeps_a_sane_learned_scale_and_bias(siglip_run):
    config, history = siglip_run
    assert config.optimizer == "sgd" and config.lr == LR
    for metrics in history:
        assert 5.0 < metrics["siglip_scale"] < 20.0, metrics
        assert -11.0 < metrics["siglip_bias"] < -9.0, metrics
    # the loss with logits independent of the embeddings (scale -> 0, bias -log 63) is 5.151
    constant = math.log(64) + 63 * math.log(64 / 63)
    assert history[-1]["loss"] < history[0]["loss"] < 0.7 * constant


def test_the_logged_regime_is_the_theory_regime_of_the_learned_scale_and_bias(siglip_run):
    config, history = siglip_run
    assert config.projector_out >= config.batch_size  # d >= N: the theory's setting
    for metrics in history:
        optimum = sigmoid_optimum(config.batch_size, metrics["siglip_scale"],
                                  -metrics["siglip_bias"])
        assert metrics["siglip_regime"] == optimum.regime
        assert metrics["siglip_optimum_s"] == optimum.normalized_positive


@pytest.mark.parametrize(("scale", "bias", "regime"), [
    (10.0, -10.0, "etf"),          # SigLIP's initialization at N = 64
    (3.0, -3.0, "intermediate"),   # between Theorem 2's thresholds 1.72 and 4.05
    (1e-3, -1.0, "antipodal"),     # t + b <= log((N - 2) / 2)
    (2.5e-8, -4.14, "etf"),        # the collapsed run of issue 28: b >= log 31 as t -> 0
])
def test_learned_metrics_label_each_regime_as_the_theory_does(scale, bias, regime):
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the parameters in float64
    try:
        siglip = losses.SigLIP(scale=scale, bias=bias, learnable=True)
    finally:
        torch.set_default_dtype(default)
    metrics = learned_metrics(siglip, batch_size=64)
    assert metrics["siglip_scale"] == pytest.approx(scale, rel=1e-14)
    assert metrics["siglip_bias"] == bias
    optimum = sigmoid_optimum(64, metrics["siglip_scale"], -metrics["siglip_bias"])
    assert metrics["siglip_regime"] == optimum.regime == regime
    assert metrics["siglip_optimum_s"] == optimum.normalized_positive
