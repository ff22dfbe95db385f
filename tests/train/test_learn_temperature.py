"""learn_temperature=true: the loss's temperature (siglip: scale and bias) is trained without
weight decay, checkpointed, resumed bit-identically from a mid-epoch checkpoint, and logged
each epoch, for siglip beside the sigmoid theory's optimum at the current (t, b)."""

import math

import pytest

import contrastkit.train.loop as loop
from contrastkit.theory import sigmoid_optimum
from contrastkit.train import PretrainConfig, build_loss, load_checkpoint, pretrain
from tests.train.test_resume import Killed, assert_same_weights, steps_per_epoch, without_timing
from tests.train.tiny import tiny_config

LEARNING = {"learn_temperature": True, "temperature": 0.1, "epochs": 2}


def saved_parameter(checkpoint: dict, name: str) -> float:
    """The loss parameter ``name`` of a checkpoint (prefixed in a sum with VRNS)."""
    (key,) = [key for key in checkpoint["loss"] if key.rsplit(".", 1)[-1] == name]
    return float(checkpoint["loss"][key])


def test_learn_temperature_needs_a_loss_with_a_temperature_or_scale():
    with pytest.raises(ValueError, match=r"learn_temperature=true needs a loss with a learnable "
                                         r"temperature or scale; loss=spectral has none"):
        PretrainConfig(loss="spectral", learn_temperature=True)


@pytest.mark.parametrize(("changes", "parameters"), [
    ({"temperature": 0.1}, {"logit_scale": math.log(10.0)}),
    ({"loss": "siglip", "siglip_scale": 5.0, "siglip_bias": -3.0},
     {"logit_scale": math.log(5.0), "logit_bias": -3.0}),
])
def test_the_config_values_are_the_initial_values(changes, parameters):
    objective = build_loss(PretrainConfig(learn_temperature=True, **changes), dataset_size=100)
    learned = {key.rsplit(".", 1)[1]: float(value.detach())
               for key, value in objective.named_parameters()}
    assert learned == pytest.approx(parameters, rel=1e-7)
    assert list(build_loss(PretrainConfig(**changes), 100).parameters()) == []


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return pretrain(tiny_config(tmp_path_factory.mktemp("learning"), **LEARNING))


def test_the_temperature_is_learned_logged_and_checkpointed(uninterrupted):
    temperatures = [metrics["temperature"] for metrics in uninterrupted.history]
    assert len(temperatures) == 2 and temperatures[-1] != pytest.approx(0.1, rel=1e-4)
    checkpoint = load_checkpoint(uninterrupted.run_dir)
    assert math.exp(-saved_parameter(checkpoint, "logit_scale")) == pytest.approx(
        temperatures[-1], rel=1e-6)
    groups = checkpoint["optimizer"]["param_groups"]
    assert len(groups) == 2 and groups[1]["weight_decay"] == 0.0 and len(groups[1]["params"]) == 1


def test_killed_mid_epoch_resumes_the_learned_temperature_exactly(tmp_path, monkeypatch,
                                                                  uninterrupted):
    """Checkpoint every 4 steps; the process dies during step 7 of epoch 2; the resumed run
    ends bitwise where the uninterrupted one ends: weights, learned temperature, metrics."""
    config = tiny_config(tmp_path, checkpoint_every=4, **LEARNING)
    real_step, calls = loop.train_step, []

    def dies_in_step_7_of_epoch_2(*args):
        calls.append(1)
        if len(calls) == steps_per_epoch(config) + 7:
            raise Killed
        return real_step(*args)

    monkeypatch.setattr(loop, "train_step", dies_in_step_7_of_epoch_2)
    with pytest.raises(Killed):
        pretrain(config)
    monkeypatch.undo()
    assert load_checkpoint(config.run_dir)["step"] == 4
    resumed = pretrain(config.with_overrides({"checkpoint_every": 0}), resume="last")
    assert_same_weights(resumed.encoder.state_dict(), uninterrupted.encoder.state_dict())
    assert without_timing(resumed.history) == without_timing(uninterrupted.history)
    assert_same_weights(load_checkpoint(config.run_dir)["loss"],
                        load_checkpoint(uninterrupted.run_dir)["loss"])


def test_siglip_logs_scale_bias_and_the_theory_optimum(tmp_path):
    config = tiny_config(tmp_path, loss="siglip", learn_temperature=True, epochs=1,
                         logger="csv,tensorboard")  # the regime is text: a message there
    (metrics,) = pretrain(config).history
    assert metrics["siglip_scale"] != pytest.approx(10.0, rel=1e-4)
    optimum = sigmoid_optimum(config.batch_size, metrics["siglip_scale"], -metrics["siglip_bias"])
    assert metrics["siglip_regime"] == optimum.regime
    assert metrics["siglip_optimum_s"] == optimum.normalized_positive
    checkpoint = load_checkpoint(config.run_dir)
    assert saved_parameter(checkpoint, "logit_bias") == pytest.approx(metrics["siglip_bias"],
                                                                      rel=1e-6)
    assert math.exp(saved_parameter(checkpoint, "logit_scale")) == pytest.approx(
        metrics["siglip_scale"], rel=1e-6)
