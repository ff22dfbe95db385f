"""The paper's training protocol in every recipe: each shipped recipe states it, and every tier
follows it or declares, with its reason, each setting it departs from (a tier whose datasets
are not installed is skipped, but for CIFAR, whose archives the tests can fake). And the
comparison itself, on small recipes: what counts as a cell's value (defaults, the peak base
learning rate, the warm-up as a share of the steps, per-loss values, lists), the deviations
found, the settings table, and the check that fails on an undeclared deviation."""

from __future__ import annotations

import types

import pytest

from contrastkit.data import DatasetUnavailableError
from contrastkit.experiments import load_recipe, recipe_names
from contrastkit.experiments import protocol as protocol_module
from contrastkit.experiments.protocol import (
    Deviation,
    check,
    deviations,
    follows,
    settings_table,
)
from tests.data import archives
from tests.experiments.tiny_recipes import PRETRAIN, SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of

SHIPPED = [(name, tier) for name in recipe_names() for tier in load_recipe(name).tiers]


def test_every_shipped_recipe_states_its_papers_protocol():
    for name in recipe_names():
        stated = load_recipe(name).protocol
        assert stated is not None and len(stated.source.split()) >= 10, name


@pytest.mark.parametrize("name, tier", SHIPPED)
def test_every_tier_follows_the_protocol_or_declares_why(name, tier, tmp_path):
    """Fails on a deviation the tier does not declare (naming recipe, tier, cell, setting,
    the paper's value and ours) and on a declared one that no cell takes."""
    recipe = load_recipe(name)
    try:
        check(recipe, tier)
    except DatasetUnavailableError:  # a fixed-steps tier counts its images: fake CIFAR
        archives.write_cifar10_archive(tmp_path, per_batch=205)
        archives.write_cifar100_archive(tmp_path, count=1025)
        try:
            check(recipe, tier, data_dir=str(tmp_path))
        except DatasetUnavailableError as error:
            pytest.skip(f"{name}, tier {tier}: {error}")


def test_the_central_papers_recipes_warm_up_for_its_share_and_run_its_temperatures():
    for name in ("table1", "fig3", "fig4", "table4", "table5"):
        recipe = load_recipe(f"similarities/{name}")
        for tier in ("quick", "cpu", "paper"):
            rows = {row["setting"]: row for row in settings_table(recipe, tier)}
            share = 0.1 if name == "table5" else 0.05  # 10 warm-up epochs of 100, of 200
            assert rows["warmup_share"]["ours"] == share, (name, tier)
            assert rows["optimizer"]["ours"] == "sgd" and rows["weight_decay"]["ours"] == 1e-4
    fig4 = load_recipe("similarities/fig4")
    temperatures = {(cell.settings["loss"], cell.settings["temperature"])
                    for cell in fig4.cells("cpu")}
    assert temperatures == {("simclr", 0.2), ("dcl", 0.1), ("dhel", 0.1)}


def test_the_lmcl_image_recipes_train_with_adam():
    for name in ("fig2", "fig4", "reduction", "table2", "table3"):
        recipe = load_recipe(f"lmcl/{name}")
        for tier in ("quick", "cpu", "paper"):
            for cell in recipe.cells(tier, seeds=1):
                assert cell.settings["optimizer"] == "adamw", (name, tier)
                assert cell.settings["weight_decay"] == 0.0 and "base_lr" not in cell.settings


# --- the comparison, on small recipes -----------------------------------------------------

#: The central paper's protocol for the tiny pretrain recipe (its base warms up for 0 epochs).
CENTRAL = {"source": "App. D of the central paper, for a test",
           "settings": {"optimizer": "sgd", "base_lr": 0.3, "warmup_share": 0.05,
                        "temperature": 0.2, "vrns": [0.0, 30.0]}}


def load(tmp_path, content):
    return load_recipe(write_recipe(tmp_path, content))


def following(**changes) -> dict:
    """The tiny pretrain recipe with the central protocol, following it in every tier."""
    content = content_of(PRETRAIN, protocol=CENTRAL, **changes)
    content["base"].pop("warmup_epochs")
    content["base"]["warmup_share"] = 0.05
    content["tiers"]["paper"]["set"].pop("warmup_epochs")
    return content


def test_a_tier_that_follows_the_protocol_has_no_deviation(tmp_path):
    recipe = load(tmp_path, following())
    for tier in ("quick", "cpu", "paper"):
        assert deviations(recipe, tier) == []
        check(recipe, tier)


def test_an_undeclared_deviation_fails_the_check_naming_everything(tmp_path):
    content = following()
    content["tiers"]["cpu"]["set"]["temperature"] = 0.5
    recipe = load(tmp_path, content)
    found = deviations(recipe, "cpu")
    assert found == [Deviation(f"batch_size={b}", "temperature", 0.2, 0.5, None)
                     for b in (64, 128)]
    with pytest.raises(ValueError, match=r"recipe tiny, tier cpu: 2 problem.*\n.*undeclared "
                                         r"deviation: cell batch_size=64: temperature paper "
                                         r"0.2, ours 0.5"):
        check(recipe, "cpu")
    check(recipe, "quick")  # the other tiers are unaffected


def test_a_declared_deviation_carries_its_reason_and_passes(tmp_path):
    content = following()
    content["tiers"]["cpu"]["set"]["temperature"] = 0.5
    content["tiers"]["cpu"]["deviations"] = {"temperature": "a test's reason"}
    recipe = load(tmp_path, content)
    assert {d.reason for d in deviations(recipe, "cpu")} == {"a test's reason"}
    assert all(d.declared for d in deviations(recipe, "cpu"))
    check(recipe, "cpu")


def test_a_declared_deviation_that_no_cell_takes_fails_the_check(tmp_path):
    content = following()
    content["tiers"]["quick"]["deviations"] = {"base_lr": "stale"}
    with pytest.raises(ValueError, match="tiers.quick.deviations.base_lr is declared, but "
                                         "every cell follows the paper's 0.3"):
        check(load(tmp_path, content), "quick")


def test_defaults_count_and_base_lr_is_the_optimizers_peak(tmp_path):
    """An unset base_lr is SGD's 0.3 (follows) and AdamW's 1e-3 (departs); an unset
    temperature is the config's default."""
    content = following()
    recipe = load(tmp_path, content)
    assert "base_lr" not in recipe.cells("quick")[0].settings
    assert deviations(recipe, "quick") == []
    content["tiers"]["quick"]["set"].update(optimizer="adamw", weight_decay=0.0)
    found = deviations(load(tmp_path, content), "quick")
    assert {(d.setting, d.paper, d.ours) for d in found} == {
        ("optimizer", "sgd", "adamw"), ("base_lr", 0.3, 1e-3)}


def test_the_warm_up_is_compared_as_a_share_of_the_steps(tmp_path):
    """warmup_epochs count for the share they make: 10 of 200 epochs follow 0.05, 1 of 2
    (the config caps the warm-up at half the run) is 0.5, 0 is 0."""
    content = content_of(PRETRAIN, protocol=CENTRAL)
    recipe = load(tmp_path, content)  # base: warmup_epochs 0; paper tier: 10 of 200 epochs
    assert deviations(recipe, "paper") == []
    assert {d.ours for d in deviations(recipe, "quick") if d.setting == "warmup_share"} == {0.0}
    content["base"]["warmup_epochs"] = 1
    recipe = load(tmp_path, content)
    assert {d.ours for d in deviations(recipe, "cpu")} == {0.5}  # 1 of 2 epochs, capped


def test_a_list_is_any_of_its_values(tmp_path):
    content = following()
    content["grid"]["vrns"] = [0.0, 30.0, 10.0]
    found = deviations(load(tmp_path, content), "quick")
    assert [(d.cell_id, d.paper, d.ours) for d in found] == [
        (f"batch_size={b},vrns=10.0", [0.0, 30.0], 10.0) for b in (64, 128)]
    assert follows([0, 30], 30.0) and follows(0.1, 0.1 + 1e-15) and not follows(1, True)


def test_per_loss_settings_pair_a_loss_with_its_temperature(tmp_path):
    """The grid's loss axis, each loss at its own temperature (per_loss), against a per-loss
    protocol value; a loss the protocol's mapping does not name is not compared."""
    stated = {"source": "a test", "settings": {"temperature": {"simclr": 0.2, "dcl": 0.1}}}
    content = content_of(PRETRAIN, protocol=stated)
    content["grid"] = {"loss": ["simclr", "dcl", "dhel"]}
    recipe = load(tmp_path, content)
    assert [(d.cell_id, d.paper, d.ours) for d in deviations(recipe, "quick")] == [
        ("loss=dcl", 0.1, 0.2)]  # dhel: the protocol states nothing for it
    content["per_loss"] = {"dcl": {"temperature": 0.1}, "dhel": {"temperature": 0.3}}
    recipe = load(tmp_path, content)
    assert deviations(recipe, "quick") == []
    assert {c.cell_id: c.settings.get("temperature") for c in recipe.cells("quick", seeds=1)
            } == {"loss=simclr": None, "loss=dcl": 0.1, "loss=dhel": 0.3}  # simclr: default
    (row,) = settings_table(recipe, "quick")
    assert row == {"setting": "temperature", "paper": {"simclr": 0.2, "dcl": 0.1},
                   "ours": {"simclr": 0.2, "dcl": 0.1}, "reason": None}


def test_the_settings_table_summarizes_each_setting_over_the_tiers_cells(tmp_path):
    content = following()
    content["grid"]["temperature"] = [0.2, 0.5]
    content["tiers"]["quick"]["deviations"] = {"temperature": "a test's reason"}
    rows = settings_table(load(tmp_path, content), "quick")
    assert [row["setting"] for row in rows] == list(CENTRAL["settings"])
    by_setting = {row["setting"]: row for row in rows}
    assert by_setting["temperature"] == {"setting": "temperature", "paper": 0.2,
                                         "ours": [0.2, 0.5], "reason": "a test's reason"}
    assert by_setting["base_lr"] == {"setting": "base_lr", "paper": 0.3, "ours": 0.3,
                                     "reason": None}
    assert by_setting["vrns"]["ours"] == 0.0


def test_a_recipe_without_a_protocol_has_nothing_to_compare(tmp_path):
    recipe = load(tmp_path, PRETRAIN)
    assert recipe.protocol is None
    assert deviations(recipe, "quick") == [] and settings_table(recipe, "quick") == []
    check(recipe, "quick")


def test_another_kinds_cells_are_its_settings_over_its_defaults(tmp_path, monkeypatch):
    """A setting the cell does not set is None, unless the kind exposes its defaults."""
    stated = {"source": "a test", "settings": {"lr": 0.1, "optimizer": "adam", "n": 4}}
    recipe = load(tmp_path, content_of(SIMULATE, protocol=stated))
    assert [(d.setting, d.paper, d.ours) for d in deviations(recipe, "quick")] == [
        ("optimizer", "adam", None)]
    kind = types.SimpleNamespace(defaults=lambda: {"optimizer": "adam", "lr": 9.0})
    monkeypatch.setattr(protocol_module, "CELL_KINDS", types.SimpleNamespace(get=lambda _: kind))
    assert deviations(recipe, "quick") == []  # optimizer from the defaults, lr the cell's
    assert settings_table(recipe, "quick")[1]["ours"] == "adam"
