"""The typed config: YAML + key=value overrides, unknown keys and bad values are errors."""

import dataclasses
import math

import pytest
import torch

from contrastkit import losses
from contrastkit.losses.polarization import POLARIZATION_REDUCTIONS as LOSS_REDUCTIONS
from contrastkit.train import PretrainConfig, WarmupCosine, build_loss, load_config, pretrain
from contrastkit.train.config import POLARIZATION_REDUCTIONS
from contrastkit.train.objective import local_share
from contrastkit.train.run_folder import check_same_config
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
    config = load_config(path, ["epochs=9", "precision=bf16", "batch_size=32"])
    assert (config.loss, config.temperature, config.epochs) == ("dcl", 0.1, 9)
    assert config.precision == "bf16" and config.batch_size == 32 and config.vrns == 0.0
    assert isinstance(config.vrns, float)


@pytest.mark.parametrize("override, match", [
    ("epochs=ten", "epochs must be int"), ("amp=maybe", "amp must be true or false"),
    ("precision=half", "precision must be one of .*fp32.*got .half."),
    ("loss=triplet", "loss must be one of"), ("batch_size=1", "batch_size must be >= 2"),
    ("temperature=0", "temperature must be > 0"), ("vrns=-1", "vrns must be >= 0"),
    ("optimizer=adam", "optimizer must be one of"), ("warmup_epochs=-1", "warmup_epochs"),
    ("epochs", "key=value"), ("beta=-1", "beta must be >= 0"), ("tau_plus=1", "tau_plus"),
    ("polarization=-0.1", "polarization must be >= 0"), ("delta_plus=0.5", "delta_plus"),
    ("delta_minus=1.5", "delta_minus"), ("base_lr=0", "base_lr must be > 0"),
    ("base_lr=fast", "base_lr must be float"),
    ("polarization_reduction=max", "polarization_reduction must be one of"),
])
def test_bad_values_are_errors_naming_the_key(override, match):
    with pytest.raises(ValueError, match=match):
        load_config(None, [override])


def test_resolved_config_round_trips_through_the_run_folder(tmp_path):
    config = tiny_config(tmp_path, loss="dhel", temperature=0.3)
    path = tmp_path / "saved.yaml"
    path.write_text(config.to_yaml())
    assert load_config(path) == config


@pytest.mark.parametrize("overrides, base", [
    ([], 0.3), (["optimizer=lars"], 0.3), (["optimizer=adamw"], 1e-3),
    (["optimizer=adamw", "base_lr=0.004"], 0.004), (["base_lr=0.5", "base_lr=none"], 0.3),
])
def test_an_unset_base_lr_is_the_optimizer_s_default(overrides, base):
    """AdamW must not inherit SGD's 0.3; the unset value survives the run folder's YAML."""
    config = load_config(None, [*overrides, "batch_size=512"])
    assert config.lr == pytest.approx(2 * base)


def test_an_unset_base_lr_round_trips_as_unset(tmp_path):
    config = tiny_config(tmp_path, optimizer="adamw", base_lr=None)
    path = tmp_path / "saved.yaml"
    path.write_text(config.to_yaml())
    assert "base_lr: null" in path.read_text() and load_config(path) == config


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


EVERY_LOSS = {
    "simclr": losses.SimCLR, "info_nce": losses.InfoNCE, "dcl": losses.DCL,
    "dhel": losses.DHEL, "siglip": losses.SigLIP, "spectral": losses.Spectral,
    "supcon": losses.SupCon, "hcl": losses.HCL, "scl": losses.SCL, "hscl": losses.HSCL,
    "ucl": losses.UCL, "hucl": losses.HUCL,
}


def test_every_registered_loss_is_a_config_choice():
    assert set(EVERY_LOSS) == set(losses.names())


@pytest.mark.parametrize("name", EVERY_LOSS)
def test_every_named_loss_builds_with_its_config_values(name):
    takes = losses.get(name).hyperparameters
    settings = {"temperature": "temperature=0.3", "beta": "beta=2", "scale": "siglip_scale=7",
                "bias": "siglip_bias=-3"}
    config = load_config(None, [f"loss={name}", "vrns=0",
                                *(settings[p] for p in takes if p in settings)])
    loss = build_loss(config, dataset_size=100)
    assert type(loss) is EVERY_LOSS[name]
    if name not in ("siglip", "spectral"):
        temperature = getattr(loss, "temperature", None) or loss.options["temperature"]
        assert temperature == 0.3
    if name == "siglip":
        assert (loss.scale, loss.bias) == (7.0, -3.0)
    if name in ("hcl",):
        assert loss.beta == 2.0 and loss.tau_plus == 0.1
    if name in ("hscl", "hucl"):
        assert loss.options["beta"] == 2.0
    if name in ("scl", "hscl", "ucl", "hucl"):  # exact and draws no random numbers: resumable
        assert loss.options["estimator"] == "importance"


@pytest.mark.parametrize("name", EVERY_LOSS)
def test_per_process_shares_are_built_exactly_where_every_term_supports_them(name):
    """Under torch.distributed the trainer builds the objective with distributed=True when it
    can (each process: its rows against the gathered batch); the rest must gather."""
    config = load_config(None, [f"loss={name}", "vrns=30"])
    supports = name in ("simclr", "info_nce", "dcl", "dhel", "siglip", "supcon")
    assert local_share(config) == supports
    assert not local_share(config.with_overrides({"polarization": 0.1}))
    if supports:
        loss = build_loss(config, dataset_size=100, distributed=True)
        assert all(term.distributed for _, term in loss.terms())
    else:
        with pytest.raises(ValueError, match="per-process shares"):
            build_loss(config, dataset_size=100, distributed=True)


def test_polarization_is_a_weighted_regularizer_with_its_band():
    config = load_config(None, ["vrns=0", "polarization=0.1", "delta_plus=0.2",
                                "delta_minus=0.6"])
    (w1, first), (w2, second) = build_loss(config, dataset_size=100).terms()
    assert isinstance(first, losses.SimCLR) and w1 == 1.0
    assert isinstance(second, losses.Polarization) and w2 == 0.1
    assert (second.delta_plus, second.delta_minus) == (0.2, 0.6)


def test_the_polarization_reduction_reaches_the_regularizer():
    """mean (the default) or sum over the batch's pairs: the objective is the NCE loss plus
    lambda times that reduction (the sum is B (B - 1) times the mean over the within-view
    pairs of a batch of B)."""
    assert PretrainConfig().polarization_reduction == "mean"
    assert POLARIZATION_REDUCTIONS == LOSS_REDUCTIONS
    generator = torch.Generator().manual_seed(0)
    u, v = (torch.randn(8, 16, generator=generator, dtype=torch.float64) for _ in range(2))
    values = {}
    for reduction in ("mean", "sum"):
        config = load_config(None, ["vrns=0", "polarization=0.1",
                                    f"polarization_reduction={reduction}"])
        objective = build_loss(config, dataset_size=100)
        (_, first), (_, second) = objective.terms()
        assert second.reduction == reduction
        values[reduction] = float(objective(u, v)) - float(first(u, v))
        assert values[reduction] == pytest.approx(
            0.1 * float(losses.polarization(u, v, reduction=reduction)), rel=1e-5)
    assert values["sum"] == pytest.approx(8 * 7 * values["mean"], rel=1e-4)


def test_the_reduction_may_be_set_without_the_regularizer():
    """polarization=0 with polarization_reduction=sum is accepted (a sweep crosses the
    reduction with the baseline) and builds no regularizer."""
    config = load_config(None, ["vrns=0", "polarization_reduction=sum"])
    assert [type(term) for _, term in build_loss(config, dataset_size=100).terms()] == [
        losses.SimCLR]


def test_a_run_saved_before_the_reduction_existed_resumes_with_the_mean(tmp_path):
    """A config.yaml without polarization_reduction was a mean-reduced run: it resumes under
    the default and refuses sum, naming the setting."""
    config = tiny_config(tmp_path, polarization=0.1)
    saved = tmp_path / "config.yaml"
    saved.write_text("".join(line + "\n" for line in config.to_yaml().splitlines()
                             if not line.startswith("polarization_reduction:")))
    assert "polarization_reduction" not in saved.read_text()
    assert check_same_config(config, saved) == config.epochs
    summed = config.with_overrides({"polarization_reduction": "sum"})
    with pytest.raises(ValueError, match="polarization_reduction: 'mean' -> 'sum'"):
        check_same_config(summed, saved)


@pytest.mark.parametrize("name", ["supcon", "hscl", "hucl"])
def test_supervised_and_hard_negative_objectives_train(tmp_path, name):
    """Labels reach the supervised losses, and the regularizers' parts are logged."""
    config = tiny_config(tmp_path, loss=name, epochs=1, warmup_epochs=0, vrns=10.0,
                         polarization=0.1)
    history = pretrain(config).history
    parts = history[0]
    assert {name, "vrns", "polarization"} <= set(parts)
    assert math.isfinite(parts["loss"])
    expected = parts[name] + 10.0 * parts["vrns"] + 0.1 * parts["polarization"]
    assert parts["loss"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("loss,setting", [
    ("siglip", "temperature=0.5"), ("simclr", "siglip_scale=5"), ("simclr", "beta=2"),
    ("spectral", "temperature=0.1"), ("hscl", "tau_plus=0.2"), ("simclr", "delta_plus=0.2"),
])
def test_a_setting_the_objective_ignores_is_refused_naming_it(loss, setting):
    key = setting.partition("=")[0]
    with pytest.raises(ValueError, match=f"{key}=.* would be ignored: loss={loss}"):
        load_config(None, [f"loss={loss}", setting])


def test_a_setting_at_its_default_is_not_refused():
    """A saved config.yaml lists every key: the unused ones stand at their defaults."""
    config = load_config(None, ["loss=siglip", "temperature=0.2", "delta_plus=0.1"])
    assert config.loss == "siglip"
    assert load_config(None, ["polarization=0.1", "delta_plus=0.2"]).delta_plus == 0.2


@pytest.mark.parametrize("epochs, per_epoch, share, steps", [
    (200, 195, 0.05, 1950), (10, 11, 0.05, 6), (3, 22, 0.5, 33), (4, 89, 0.0, 0)])
def test_a_warm_up_share_is_that_share_of_the_run_s_steps(epochs, per_epoch, share, steps):
    config = load_config(None, [f"epochs={epochs}", f"warmup_share={share}"])
    assert config.warmup_steps(per_epoch) == steps == round(share * epochs * per_epoch)


def test_the_share_holds_at_every_batch_size_where_whole_epochs_cannot():
    """1 000 steps at batch 16 and at 256 on 1 437 images: 5 % is 50 steps at both."""
    for batch in (16, 256):
        per_epoch = 1437 // batch
        epochs = math.ceil(1000 / per_epoch)
        config = load_config(None, [f"epochs={epochs}", "warmup_share=0.05"])
        assert config.warmup_steps(per_epoch) == round(0.05 * epochs * per_epoch)
        assert abs(config.warmup_steps(per_epoch) - 50) <= 0.05 * per_epoch


@pytest.mark.parametrize("overrides, match", [
    (["warmup_share=0.6"], r"warmup_share must be in \[0, 0.5\]"),
    (["warmup_share=-0.1"], r"warmup_share must be in \[0, 0.5\]"),
    (["warmup_share=nan"], "warmup_share must be finite"),
    (["warmup_share=0.05", "warmup_epochs=10"], "warmup_epochs=10 would be ignored"),
])
def test_a_bad_warm_up_share_is_an_error_naming_it(overrides, match):
    with pytest.raises(ValueError, match=match):
        load_config(None, overrides)


@pytest.mark.parametrize("override, match", [
    (["matryoshka_dims=64,x"], "matryoshka_dims must be comma-separated ints such as"),
    (["matryoshka_dims=64,32"], "matryoshka_dims must be strictly increasing"),
    (["matryoshka_dims=0,32"], r"matryoshka_dims must hold integers >= 1"),
    (["matryoshka_dims=64,256"], "must stay within the embedding dimension projector_out=128"),
    (["matryoshka_weights=1,2"], "matryoshka_weights=1,2 would be ignored without"),
    (["matryoshka_dims=32,64", "matryoshka_weights=1"], "one weight per dimension"),
    (["matryoshka_dims=32,64", "matryoshka_weights=1,-2"], "matryoshka_weights must hold"),
    (["matryoshka_dims=32,64", "matryoshka_weights=1,nan"], "matryoshka_weights must hold"),
])
def test_bad_matryoshka_settings_are_errors_naming_the_key(override, match):
    with pytest.raises(ValueError, match=match):
        load_config(None, override)


@pytest.mark.parametrize("task", ["views", "image_text", "text_pairs"])
def test_matryoshka_dims_wrap_the_objective_of_every_task(task):
    config = load_config(None, [f"task={task}", "matryoshka_dims=32, 64,128",
                                "matryoshka_weights=1,1,2"])
    objective = build_loss(config, dataset_size=100)
    assert isinstance(objective, losses.Matryoshka)
    assert (objective.dims, objective.weights) == ((32, 64, 128), (1.0, 1.0, 2.0))
    assert type(objective.loss) is type(build_loss(dataclasses.replace(
        config, matryoshka_dims="", matryoshka_weights=""), dataset_size=100))
    own_encoder = dataclasses.replace(config, user_encoder="Mine", matryoshka_dims="64,256",
                                      matryoshka_weights="")
    assert own_encoder.matryoshka_dims == "64,256"  # its width is checked by the loss
