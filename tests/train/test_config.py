"""The typed config: YAML + key=value overrides, unknown keys and bad values are errors."""

import dataclasses

import pytest

from contrastkit import losses
from contrastkit.train import PretrainConfig, WarmupCosine, build_loss, load_config
from tests.train.tiny import tiny_config


def test_unknown_key_is_an_error_listing_the_valid_keys():
    with pytest.raises(ValueError) as error:
        load_config(None, ["lerning_rate=0.1"])
    message = str(error.value)
    assert "lerning_rate" in message
    for field in dataclasses.fields(PretrainConfig):
        assert field.name in message


def test_yaml_then_overrides_are_applied_and_typed(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("loss: dcl\ntemperature: 0.1\nepochs: 7\nvrns: 0\n")
    config = load_config(path, ["epochs=9", "amp=false", "batch_size=32"])
    assert (config.loss, config.temperature, config.epochs) == ("dcl", 0.1, 9)
    assert config.amp is False and config.batch_size == 32 and config.vrns == 0.0
    assert isinstance(config.vrns, float)


@pytest.mark.parametrize("override, match", [
    ("epochs=ten", "epochs must be int"), ("amp=maybe", "amp must be true or false"),
    ("loss=triplet", "loss must be one of"), ("batch_size=1", "batch_size must be >= 2"),
    ("temperature=0", "temperature must be > 0"), ("vrns=-1", "vrns must be >= 0"),
    ("optimizer=adam", "optimizer must be one of"), ("warmup_epochs=99", "warmup_epochs"),
    ("epochs", "key=value"),
])
def test_bad_values_are_errors_naming_the_key(override, match):
    with pytest.raises(ValueError, match=match):
        load_config(None, [override])


def test_resolved_config_round_trips_through_the_run_folder(tmp_path):
    config = tiny_config(tmp_path, loss="dhel", temperature=0.3)
    path = tmp_path / "saved.yaml"
    path.write_text(config.to_yaml())
    assert load_config(path) == config


def test_vrns_weight_and_dataset_size_make_the_composite_objective():
    config = load_config(None, ["loss=simclr", "temperature=0.2", "vrns=30"])
    objective = build_loss(config, dataset_size=1437)
    (w1, first), (w2, second) = objective.terms()
    assert isinstance(first, losses.SimCLR) and first.temperature == 0.2 and w1 == 1.0
    assert isinstance(second, losses.VRNS) and second.n == 1437 and w2 == 30.0
    plain = build_loss(load_config(None, ["loss=siglip", "vrns=0"]), 100)
    assert isinstance(plain, losses.SigLIP) and plain.terms()[0][0] == 1.0


def test_learning_rate_is_scaled_by_batch_and_warms_up_then_decays():
    assert PretrainConfig(base_lr=0.3, batch_size=512).lr == pytest.approx(0.6)
    schedule = WarmupCosine(warmup=10, total=110)
    assert schedule(0) == pytest.approx(0.1) and schedule(9) == pytest.approx(1.0)
    assert schedule(10) == pytest.approx(1.0) and schedule(60) == pytest.approx(0.5)
    assert schedule(109) == pytest.approx(0.0, abs=1e-3)
    with pytest.raises(ValueError):
        WarmupCosine(warmup=5, total=3)
