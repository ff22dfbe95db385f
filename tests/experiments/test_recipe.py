"""The recipe format: loading, the checks of every level (unknown keys, required keys, tiers,
axes, simulate settings, metrics, claims), and the cells a tier expands into."""

from __future__ import annotations

import math

import pytest

import contrastkit.data
from contrastkit.data import load_dataset, pretrain_split
from contrastkit.experiments import load_recipe, recipe, recipe_names
from contrastkit.experiments.recipe import train_size
from contrastkit.train import PretrainConfig
from tests.experiments.tiny_recipes import PRETRAIN, SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of


def load(tmp_path, content):
    return load_recipe(write_recipe(tmp_path, content))


def test_a_recipe_file_loads_with_its_tiers_claims_and_paper_values(tmp_path):
    loaded = load(tmp_path, PRETRAIN)
    assert loaded.name == "tiny" and loaded.kind == "pretrain" and loaded.fixed == "epochs"
    assert list(loaded.tiers) == ["quick", "cpu", "paper"]
    assert loaded.tiers["quick"].seeds == 2 and loaded.tiers["paper"].estimate_minutes == 6000
    assert loaded.claims[0].id == "falls" and loaded.claims[0].alpha == 0.05
    assert loaded.paper[0]["value"] == 0.1
    assert loaded.metrics == tuple(PRETRAIN["metrics"])


def test_shipped_recipes_are_listed_and_loaded_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "RECIPES", tmp_path)
    write_recipe(tmp_path / "papers", PRETRAIN, "table9")
    write_recipe(tmp_path / "papers", SIMULATE, "fig9")
    assert recipe_names() == ["papers/fig9", "papers/table9"]
    loaded = load_recipe("papers/table9")
    assert loaded.name == "papers/table9" and loaded.source == "papers/table9.yaml"


def test_an_unknown_recipe_name_lists_the_shipped_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "RECIPES", tmp_path)
    write_recipe(tmp_path / "papers", PRETRAIN, "table9")
    with pytest.raises(ValueError, match="recipe must be one of papers/table9 .*'papers/tabel9'"):
        load_recipe("papers/tabel9")


def _with(path: tuple, value, base=PRETRAIN) -> dict:
    """A copy of ``base`` with the key at ``path`` set to ``value``."""
    content = content_of(base)
    node = content
    for key in path[:-1]:
        node = node[key] if isinstance(node, list) else node.setdefault(key, {})
    node[path[-1]] = value
    return content


@pytest.mark.parametrize("path, where", [
    (("tier",), "at the top level"),
    (("tiers", "quick", "tier"), "in tiers.quick"),
    (("tiers", "fast"), "in tiers"),
    (("claims", 0, "metrik"), r"in claims\[0\]"),
    (("evaluate", "probe_epochs"), "in evaluate"),
    (("tiers", "cpu", "evaluate", "k"), "in tiers.cpu.evaluate"),
    (("paper", 0, "temperature"), r"in paper\[0\]"),
    (("claims", 0, "where"), r"in claims\[0\].where"),
])
def test_an_unknown_key_at_any_level_names_the_file_and_the_key(tmp_path, path, where):
    value = {"bogus": 1} if path[-1] == "where" else {"seeds": 1, "estimate_minutes": 1}
    key = "bogus" if path[-1] == "where" else path[-1]
    with pytest.raises(ValueError, match=rf"recipe .*tiny\.yaml: unknown key '{key}' {where}"):
        load(tmp_path, _with(path, value))


@pytest.mark.parametrize("missing, message", [
    ("title", "missing required key.*title"),
    ("tiers", "missing required key.*tiers"),
    ("fixed", "missing required key 'fixed'"),
])
def test_a_missing_required_key_is_named(tmp_path, missing, message):
    content = content_of(PRETRAIN)
    del content[missing]
    with pytest.raises(ValueError, match=rf"tiny\.yaml: {message}"):
        load(tmp_path, content)


def test_a_pretrain_recipe_needs_all_three_tiers(tmp_path):
    content = content_of(PRETRAIN)
    del content["tiers"]["paper"]
    with pytest.raises(ValueError, match="missing tier.*paper"):
        load(tmp_path, content)


@pytest.mark.parametrize("path, value, message", [
    (("tiers", "quick", "seeds"), 0, "tiers.quick.seeds must be an integer >= 1"),
    (("tiers", "cpu", "estimate_minutes"), "soon", "estimate_minutes must be a number"),
    (("kind",), "train", r"kind must be one of pretrain, (\w+, )*simulate"),
    (("figure",), "scatter", "figure must be one of"),
    (("metrics",), ["top1"], "unknown metric 'top1'"),
    (("claims", 0, "test"), "smaller", "test must be one of"),
    (("claims", 0, "along"), "lr", "names 'lr', which is not an axis"),
    (("claims", 0, "metric"), "knn_top1", "metric must be one of the recipe's metrics"),
    (("paper", 0, "metric"), "knn_top5", "metric must be one of the recipe's metrics"),
    (("grid", "batch_size"), [], "grid.batch_size must be a non-empty list"),
    (("grid", "loss"), ["simclr", "a/b"], "axis values must be numbers or names"),
    (("tiers", "quick", "steps"), 40, "holds epochs fixed; set epochs"),
])
def test_bad_values_are_named(tmp_path, path, value, message):
    with pytest.raises(ValueError, match=message):
        load(tmp_path, _with(path, value))


@pytest.mark.parametrize("where", [("grid",), ("tiers", "quick", "grid")])
def test_a_grid_axis_that_is_not_a_config_key_is_named(tmp_path, where):
    content = _with((*where, "batch"), [16, 32])
    with pytest.raises(ValueError, match="grid axis 'batch' in .*grid is not a config key"):
        load(tmp_path, content)


@pytest.mark.parametrize("key", ["runs_dir", "name", "seed", "progress"])
def test_the_settings_the_runner_sets_are_refused(tmp_path, key):
    with pytest.raises(ValueError, match=f"'{key}' in base is set by the runner"):
        load(tmp_path, _with(("base", key), "x"))


def test_fixed_steps_needs_steps_and_no_epochs(tmp_path):
    content = _with(("fixed",), "steps")
    with pytest.raises(ValueError, match="tiers.quick holds steps fixed and needs 'steps'"):
        load(tmp_path, content)
    for tier in content["tiers"].values():
        tier["steps"] = 30
    with pytest.raises(ValueError, match="remove 'epochs'"):
        load(tmp_path, content)


def test_simulate_settings_are_the_simulation_functions_arguments(tmp_path):
    load(tmp_path, _with(("base", "schedule"), "constant", SIMULATE))  # optimize_embeddings'
    with pytest.raises(ValueError, match="'batch_size' in base is not a simulate setting"):
        load(tmp_path, _with(("base", "batch_size"), 2, SIMULATE))
    with pytest.raises(ValueError, match="grid axis 'epochs' in grid is not a simulate setting"):
        load(tmp_path, _with(("grid",), {"epochs": [1, 2]}, SIMULATE))
    with pytest.raises(ValueError, match="evaluate applies to kind: pretrain only"):
        load(tmp_path, _with(("evaluate",), {"pairs": 10}, SIMULATE))


def test_cells_are_the_product_of_the_axes_times_the_seeds(tmp_path):
    content = _with(("grid", "vrns"), [0.0, 30.0])
    cells = load(tmp_path, content).cells("quick")
    assert [(c.cell_id, c.seed) for c in cells] == [
        (f"batch_size={b},vrns={v}", s) for b in (64, 128) for v in (0.0, 30.0) for s in (0, 1)]
    assert cells[2].axes == {"batch_size": 64, "vrns": 30.0}
    assert cells[2].folder("OUT").as_posix() == "OUT/cells/batch_size=64,vrns=30.0/seed-0"
    assert {c.kind for c in cells} == {"pretrain"} and {c.tier for c in cells} == {"quick"}
    assert cells[0].evaluate == PRETRAIN["evaluate"]


def test_seeds_override_the_tiers(tmp_path):
    loaded = load(tmp_path, PRETRAIN)
    assert [c.seed for c in loaded.cells("quick", seeds=3)] == [0, 1, 2] * 2
    with pytest.raises(ValueError, match="seeds must be >= 1, got 0"):
        loaded.cells("quick", seeds=0)
    with pytest.raises(ValueError, match="tier must be one of quick, cpu, paper"):
        loaded.cells("huge")


def test_settings_are_base_then_tier_set_then_axis_values(tmp_path):
    content = content_of(PRETRAIN)
    content["base"].update(temperature=0.1, batch_size=32, epochs=9)
    content["tiers"]["quick"]["set"] = {"temperature": 0.3, "epochs": 2}
    content["tiers"]["quick"]["grid"] = {"batch_size": [16]}  # replaces the top-level axis
    content["tiers"]["quick"]["evaluate"] = {"pairs": 50}
    cell = load(tmp_path, content).cells("quick")[0]
    assert cell.cell_id == "batch_size=16"
    assert (cell.settings["temperature"], cell.settings["epochs"]) == (0.3, 2)
    assert cell.settings["batch_size"] == 16 and cell.settings["projector_out"] == 8
    assert cell.evaluate == {**PRETRAIN["evaluate"], "pairs": 50}


def test_fixed_steps_gives_every_cell_the_epochs_for_the_same_steps(tmp_path, monkeypatch):
    content = _with(("fixed",), "steps")
    for tier in content["tiers"].values():
        tier["steps"] = 30
        tier["set"].pop("epochs")
    content["base"]["warmup_epochs"] = 2
    content["tiers"]["quick"]["grid"] = {"batch_size": [16, 512]}
    size = len(load_dataset("digits", pretrain_split("digits")))
    loads = []
    real_load = contrastkit.data.load_dataset
    monkeypatch.setattr(contrastkit.data, "load_dataset",
                        lambda *args: loads.append(args) or real_load(*args))
    train_size.cache_clear()
    cells = load(tmp_path, content).cells("quick")
    assert len(loads) == 1  # the dataset is read once for all cells
    for cell in cells:
        batch = cell.settings["batch_size"]
        epochs = math.ceil(30 / (size // batch))
        assert cell.settings["epochs"] == epochs
        assert cell.steps == epochs * (size // batch) >= 30
        assert cell.settings["warmup_epochs"] == min(2, epochs)


def test_fixed_steps_with_a_warm_up_share_keeps_the_share_at_every_batch_size(tmp_path):
    """The paper's 5 % warm-up at batch 16 and 512 alike (whole epochs of warm-up cannot: one
    epoch is 7 % of the steps at one batch and 33 % at the other)."""
    content = _with(("fixed",), "steps")
    for tier in content["tiers"].values():
        tier["steps"] = 60
        tier["set"].pop("epochs")
    content["base"].pop("warmup_epochs")
    content["base"]["warmup_share"] = 0.05
    content["tiers"]["quick"]["grid"] = {"batch_size": [16, 512]}
    for cell in load(tmp_path, content).cells("quick"):
        config = PretrainConfig().with_overrides(cell.settings)
        per_epoch = cell.steps // config.epochs
        assert config.warmup_steps(per_epoch) == round(0.05 * cell.steps)
        assert "warmup_epochs" not in cell.settings


def test_fixed_steps_with_a_batch_larger_than_the_dataset_is_an_error(tmp_path):
    content = _with(("fixed",), "steps")
    for tier in content["tiers"].values():
        tier["steps"] = 30
        tier["set"].pop("epochs")
    content["tiers"]["quick"]["grid"] = {"batch_size": [4096]}
    with pytest.raises(ValueError, match=r"batch_size must be an integer in \[2, "):
        load(tmp_path, content).cells("quick")


def test_a_simulate_tiers_steps_set_the_optimization_steps(tmp_path):
    content = content_of(SIMULATE)
    content["grid"] = {"m": [2, 4]}
    content["tiers"]["quick"]["steps"] = 7
    cells = load(tmp_path, content).cells("quick")
    assert [c.cell_id for c in cells] == ["m=2", "m=4"]
    assert {c.steps for c in cells} == {7} and cells[0].settings["steps"] == 7


LOWER = {"id": "lower", "text": "t", "metric": "neg_sim_var", "test": "lower",
         "treatment": {"batch_size": 64}, "control": {"batch_size": 128}}


def _with_claim(claim: dict) -> dict:
    """PRETRAIN over batch_size x temperature with ``claim`` added to its claims."""
    content = _with(("grid", "temperature"), [0.1, 0.5])
    content["claims"].append(claim)
    return content


@pytest.mark.parametrize("for_each", ["temperature", ["temperature"]])
def test_a_claim_may_test_at_every_level_of_one_axis_or_of_several(tmp_path, for_each):
    loaded = load(tmp_path, _with_claim({**LOWER, "for_each": for_each}))
    assert loaded.claims[-1].for_each == for_each


@pytest.mark.parametrize("for_each, message", [
    (["temperature", "lr"], "names 'lr', which is not an axis"),
    (["temperature", "temperature"], "for_each repeats an axis"),
    (7, "for_each must be an axis name or a non-empty list"),
    ([], "for_each must be an axis name or a non-empty list"),
    ("batch_size", "for_each axis 'batch_size' is also fixed by treatment"),
])
def test_a_bad_for_each_is_named_when_the_recipe_loads(tmp_path, for_each, message):
    with pytest.raises(ValueError, match=rf"claims\[1\].*{message}"):
        load(tmp_path, _with_claim({**LOWER, "for_each": for_each}))


def test_a_claim_key_that_does_not_fit_its_test_is_named_when_the_recipe_loads(tmp_path):
    with pytest.raises(ValueError, match=r"claims\[1\]: claim 'lower': key 'along' does not "
                                         "apply to test 'lower'"):
        load(tmp_path, _with_claim({**LOWER, "along": "temperature"}))


# --- the paper's protocol, tiers' deviations, per-loss settings ---------------------------

PROTOCOL = {"source": "App. D of a test paper", "settings": {"temperature": 0.2,
                                                             "vrns": [0.0, 30.0]}}


def test_a_protocol_and_deviations_load_into_the_recipe_and_its_tiers(tmp_path):
    content = content_of(PRETRAIN, protocol=PROTOCOL)
    content["tiers"]["cpu"]["deviations"] = {"temperature": "a reason"}
    loaded = load(tmp_path, content)
    assert loaded.protocol == recipe.Protocol(source=PROTOCOL["source"],
                                              settings=PROTOCOL["settings"])
    assert loaded.tiers["cpu"].deviations == {"temperature": "a reason"}
    assert loaded.tiers["quick"].deviations == {} and load(tmp_path, PRETRAIN).protocol is None


@pytest.mark.parametrize("change, message", [
    ({"bogus": 1}, r"unknown key 'bogus' in protocol; valid keys: source, settings"),
    ({"source": None}, "protocol.source must say, in words, where the paper states"),
    ({"source": "  "}, "protocol.source must say"),
    ({"settings": None}, "protocol.settings must be a mapping of setting"),
    ({"settings": {"learning_rate": 0.3}},
     "'learning_rate' in protocol.settings is not a config key"),
    ({"settings": {"name": "x"}}, "'name' in protocol.settings is set by the runner"),
    ({"settings": {"temperature": []}}, r"protocol.settings.temperature must be the paper's "
                                        r"value \(a number or a name\), a non-empty list"),
    ({"settings": {"temperature": {}}}, "protocol.settings.temperature is an empty mapping"),
    ({"settings": {"temperature": {"dcl": 0.1}}},
     r"protocol.settings.temperature names loss 'dcl', which the recipe does not run \(simclr\)"),
    ({"settings": {"temperature": {"simclr": {"t": 1}}}},
     "protocol.settings.temperature.simclr must be the paper's value"),
])
def test_a_bad_protocol_is_named(tmp_path, change, message):
    content = content_of(PRETRAIN, protocol={**PROTOCOL, **change})
    with pytest.raises(ValueError, match=rf"tiny\.yaml: {message}"):
        load(tmp_path, content)


def test_a_protocol_setting_must_be_a_setting_of_the_recipes_kind(tmp_path):
    load(tmp_path, content_of(SIMULATE, protocol={"source": "Fig. 2", "settings": {"n": 4}}))
    with pytest.raises(ValueError, match="'batch_size' in protocol.settings is not a simulate "
                                         "setting"):
        load(tmp_path, content_of(SIMULATE, protocol={"source": "Fig. 2",
                                                      "settings": {"batch_size": 4}}))


@pytest.mark.parametrize("deviations, message", [
    ({"base_lr": "faster"}, "tiers.cpu.deviations names 'base_lr', which protocol.settings "
                            "does not state"),
    ({"temperature": ""}, "tiers.cpu.deviations.temperature must be the reason, in words"),
    ({"temperature": 0.5}, "tiers.cpu.deviations.temperature must be the reason"),
    (["temperature"], "tiers.cpu.deviations must be a mapping of setting: reason"),
])
def test_a_bad_deviation_is_named(tmp_path, deviations, message):
    content = content_of(PRETRAIN, protocol=PROTOCOL)
    content["tiers"]["cpu"]["deviations"] = deviations
    with pytest.raises(ValueError, match=rf"tiny\.yaml: {message}"):
        load(tmp_path, content)


def test_deviations_need_a_protocol(tmp_path):
    content = content_of(PRETRAIN)
    content["tiers"]["cpu"]["deviations"] = {"temperature": "a reason"}
    with pytest.raises(ValueError, match="tiers.cpu.deviations needs a protocol"):
        load(tmp_path, content)


def test_per_loss_settings_apply_after_the_grid_and_the_tiers_update_the_recipes(tmp_path):
    content = _with(("grid", "loss"), ["simclr", "dcl"])
    content["per_loss"] = {"dcl": {"temperature": 0.1, "vrns": 30.0}}
    content["tiers"]["cpu"]["per_loss"] = {"dcl": {"temperature": 0.3},
                                           "simclr": {"temperature": 0.4}}
    loaded = load(tmp_path, content)
    assert loaded.per_loss_for("cpu") == {"dcl": {"temperature": 0.3, "vrns": 30.0},
                                          "simclr": {"temperature": 0.4}}
    quick = {c.cell_id: c.settings for c in loaded.cells("quick", seeds=1)}
    assert quick["batch_size=64,loss=dcl"]["temperature"] == 0.1
    assert quick["batch_size=64,loss=dcl"]["vrns"] == 30.0  # over base's vrns 0
    assert "temperature" not in quick["batch_size=64,loss=simclr"]
    cpu = {c.cell_id: c.settings for c in loaded.cells("cpu", seeds=1)}
    assert cpu["batch_size=128,loss=dcl"]["temperature"] == 0.3
    assert cpu["batch_size=128,loss=simclr"]["temperature"] == 0.4


def test_per_loss_settings_of_the_default_loss(tmp_path):
    """A pretrain recipe that sets no loss runs the config's default, simclr."""
    content = content_of(PRETRAIN, per_loss={"simclr": {"temperature": 0.3}})
    assert {c.settings["temperature"] for c in load(tmp_path, content).cells("quick")} == {0.3}


@pytest.mark.parametrize("per_loss, message", [
    ({"dhel": {"temperature": 0.1}}, r"per_loss names loss 'dhel', which the recipe does not "
                                     r"run \(dcl, simclr\)"),
    ({"dcl": {"temp": 0.1}}, "'temp' in per_loss.dcl is not a config key"),
    ({"dcl": {"batch_size": 32}}, "'batch_size' in per_loss.dcl is a grid axis"),
    ({"dcl": {"loss": "simclr"}}, "'loss' in per_loss.dcl is the loss itself"),
    ({"dcl": {}}, "per_loss.dcl must be a non-empty mapping"),
    ([], "per_loss must be a mapping of loss"),
])
def test_bad_per_loss_settings_are_named(tmp_path, per_loss, message):
    content = _with(("grid", "loss"), ["simclr", "dcl"])
    content["per_loss"] = per_loss
    with pytest.raises(ValueError, match=rf"tiny\.yaml: {message}"):
        load(tmp_path, content)


def test_per_loss_settings_need_a_kind_with_a_loss(tmp_path):
    content = {"title": "t", "reproduces": "r", "kind": "ccem", "base": {"delta": 1},
               "metrics": ["pos_sim"], "per_loss": {"simclr": {"n": 3}},
               "tiers": {"quick": {"seeds": 1, "estimate_minutes": 0.1}}}
    with pytest.raises(ValueError, match="per_loss applies to kinds with a loss setting; a "
                                         "ccem cell has none"):
        load(tmp_path, content)
