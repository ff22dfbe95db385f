"""Small recipe files for the tests of the recipe format and the runner, written in tmp_path."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

#: Two cells (batch 64, 128) x 2 seeds of a narrow digits model, one epoch each (22 and 11
#: steps), evaluated in a second or so.
PRETRAIN = {
    "title": "Tiny: negative-pair variance against batch size",
    "reproduces": "nothing: a test recipe",
    "kind": "pretrain",
    "fixed": "epochs",
    "base": {"dataset": "digits", "backbone": "small_cnn", "projector_hidden": 16,
             "projector_out": 8, "vrns": 0.0, "warmup_epochs": 0, "device": "cpu",
             "precision": "fp32"},
    "grid": {"batch_size": [64, 128]},
    "metrics": ["neg_sim_var", "neg_sim_mean", "train_loss", "linear_top1"],
    "evaluate": {"pairs": 100, "knn_k": 5},
    "paper": [{"batch_size": 64, "metric": "neg_sim_var", "value": 0.1}],
    "claims": [{"id": "falls", "text": "the variance falls with the batch size",
                "metric": "neg_sim_var", "test": "decreasing", "along": "batch_size",
                "trend": "monotone"}],
    "tiers": {
        "quick": {"seeds": 2, "estimate_minutes": 0.5, "set": {"epochs": 1}},
        "cpu": {"seeds": 3, "estimate_minutes": 5, "set": {"epochs": 2}},
        "paper": {"seeds": 3, "estimate_minutes": 6000,
                  "set": {"dataset": "cifar10", "backbone": "resnet18", "epochs": 200,
                          "warmup_epochs": 10, "projector_hidden": 512, "projector_out": 128},
                  "grid": {"batch_size": [256, 512]}},
    },
}

#: The central paper's Fig. 2 setting: n = 4 pairs in d = 3, fixed mini-batches of m = 2.
SIMULATE = {
    "title": "Tiny simulation",
    "reproduces": "nothing: a test recipe",
    "kind": "simulate",
    "base": {"loss": "simclr", "temperature": 0.5, "n": 4, "d": 3, "m": 2, "steps": 300,
             "lr": 0.1},
    "metrics": ["full_neg_mean", "theory_full_neg_mean", "mini_neg_var", "theory_mini_var_low",
                "theory_mini_var_high"],
    "tiers": {"quick": {"seeds": 1, "estimate_minutes": 0.1}},
}


def recipe(original: dict = PRETRAIN, **changes) -> dict:
    """A deep copy of ``original`` with top-level ``changes``."""
    content = copy.deepcopy(original)
    content.update(copy.deepcopy(changes))
    return content


def write_recipe(folder: Path, content: dict, name: str = "tiny") -> Path:
    """``folder/<name>.yaml`` holding ``content``."""
    path = Path(folder) / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path
