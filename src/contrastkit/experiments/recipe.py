"""Reproduction recipes: YAML files that state a grid of runs, the metrics to record, the
paper's own numbers, the claims to test, and three tiers of scale (``quick``, ``cpu``,
``paper``).

A recipe is read by :func:`load_recipe` (a shipped name such as ``"similarities/table1"``, or
the path of a YAML file) and checked as a whole: any unknown key, at any level, is a
``ValueError`` naming the file and the key. :meth:`Recipe.cells` expands a tier into its
:class:`Cell` s, one per point of the grid and seed.

A recipe states its paper's training protocol (``protocol:``, a :class:`Protocol`: where the
paper states it, and the paper's value of each setting), and each tier declares the reason for
every setting it departs from it (``deviations:``); :mod:`.protocol` compares the cells with
it. ``per_loss:`` gives settings that go with a loss (the temperature the authors ran each loss
at), applied to every cell of that loss after the grid.

The shipped recipes reproduce Lee, Lim, Lee, Sohn, "On the Similarities of Embeddings in
Contrastive Learning", ICML 2025, arXiv:2506.09781.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from contrastkit.checks.scalars import check_count

from . import recipe_checks as checks
from .kinds import CELL_KINDS
from .protocol_checks import check_protocol_keys

RECIPES = Path(__file__).resolve().parent / "recipes"
SUFFIX = ".yaml"


@dataclass(frozen=True)
class Tier:
    """One scale of a recipe: ``seeds`` seeds per cell, the whole tier's ``estimate_minutes``
    (what the progress line and the dry run say before a cell has finished) and, once the tier
    has run, its ``measured`` wall time (``{"minutes", "cores", "jobs"}``, from the committed
    run record),
    the optimizer ``steps`` of every cell (``fixed: steps`` recipes), settings ``set`` over the
    recipe's ``base``, ``grid`` axes replacing the recipe's, ``per_loss`` settings over the
    recipe's (per loss and setting), ``evaluate`` arguments over the recipe's, a ``fixed`` that
    overrides the recipe's, and ``deviations``: for each setting of the recipe's protocol that
    the tier departs from, the reason in words."""

    name: str
    seeds: int
    estimate_minutes: float
    measured: dict | None = None
    steps: int | None = None
    set: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    per_loss: dict = field(default_factory=dict)
    evaluate: dict = field(default_factory=dict)
    fixed: str | None = None
    notes: str | None = None
    deviations: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Protocol:
    """The paper's training protocol: ``source``, where the paper states it (in words), and
    ``settings``, each setting's value in the paper: a value, a list (any of its values: a
    grid the paper ran), or a mapping ``{loss: value}`` (a per-loss value, such as the
    temperature the authors ran each loss at). What the paper does not state is left out of
    ``settings`` (and ``source`` says so)."""

    source: str
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimSpec:
    """One claim of the paper as a checkable predicate (see ``claims.evaluate_claims``):
    ``test`` of ``metric`` (``lower``, ``higher``, ``decreasing``, ``increasing``,
    ``less_spread``, ``larger_gain``, ``close``, ``at_least``, ``at_most``), with the axes and
    values it compares, a trend's reading (``trend``: ``monotone`` or ``end_to_end``) and a
    comparison's minimum effect (``min_effect`` or ``min_share``)."""

    id: str
    text: str
    metric: str
    test: str
    along: str | None = None
    where: dict = field(default_factory=dict)
    treatment: dict = field(default_factory=dict)
    control: dict = field(default_factory=dict)
    across: str | None = None
    for_each: str | list[str] | None = None
    target: float | str | None = None
    tolerance: float | None = None
    alpha: float = 0.05
    trend: str | None = None
    min_effect: float | None = None
    min_share: float | None = None


@dataclass(frozen=True)
class Cell:
    """One run of a recipe: a point of the tier's grid (``axes``, named by ``cell_id``, e.g.
    ``batch_size=16,vrns=30.0``) with one ``seed``.

    ``settings`` is everything the run needs: the ``PretrainConfig`` keys (``kind:
    pretrain``; the runner adds ``runs_dir``, ``name``, ``seed`` and ``progress``) or the
    settings of its kind (:mod:`.kinds`). ``evaluate`` holds ``evaluate_run``'s
    arguments. ``steps`` is the number of optimizer steps of the run when known before it
    runs (``fixed: steps``, and the kinds with steps); ``None`` otherwise.
    """

    recipe: str
    tier: str
    cell_id: str
    axes: dict
    seed: int
    settings: dict
    evaluate: dict
    kind: str
    steps: int | None = None

    def folder(self, out: str | Path) -> Path:
        """The cell's run folder: ``out/cells/<cell_id>/seed-<seed>``."""
        return Path(out) / "cells" / self.cell_id / f"seed-{self.seed}"

    def identity(self) -> dict:
        """What the cell computes, which a finished cell must match to be reused: the recipe,
        tier, kind, seed and steps; every setting resolved over its default (for a pretrain
        cell, every ``PretrainConfig`` key but those that only say where and how it runs
        (``contrastkit.train.config.EXECUTION_SETTINGS``: a sweep folder moved elsewhere, or
        run with its data in another folder or on another device, holds the same cells) and
        those the runner sets, so a changed
        default changes the identity too); and ``evaluate_run``'s arguments resolved over
        their defaults. In JSON's types (tuples as lists)."""
        if self.kind == "pretrain":
            from contrastkit.train.config import EXECUTION_SETTINGS

            resolved = checks.pretrain_settings(self.settings)
            settings = {key: value for key, value in resolved.items()
                        if key not in EXECUTION_SETTINGS + checks.RUNNER_KEYS}
            evaluate = {**checks.evaluate_defaults(), **self.evaluate}
        else:
            settings, evaluate = dict(self.settings), dict(self.evaluate)
        identity = {"recipe": self.recipe, "tier": self.tier, "kind": self.kind,
                    "seed": self.seed, "steps": self.steps, "settings": settings,
                    "evaluate": evaluate}
        return json.loads(json.dumps(identity))

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Recipe:
    """A loaded, checked recipe (see the module docstring and :func:`load_recipe`).

    ``name`` is the shipped name (``similarities/table1``) or, for a file, its stem; ``source``
    is how errors name it (``similarities/table1.yaml``, or the file's path).
    """

    name: str
    source: str
    title: str
    reproduces: str
    kind: str
    metrics: tuple[str, ...]
    tiers: dict[str, Tier]
    fixed: str | None = None
    notes: str | None = None
    figure: str | None = None
    base: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    per_loss: dict = field(default_factory=dict)
    evaluate: dict = field(default_factory=dict)
    paper: tuple[dict, ...] = ()
    claims: tuple[ClaimSpec, ...] = ()
    protocol: Protocol | None = None

    def tier(self, name: str) -> Tier:
        """The tier ``name``; a ``ValueError`` listing the recipe's tiers otherwise."""
        if name not in self.tiers:
            raise ValueError(f"tier must be one of {', '.join(self.tiers)} for recipe "
                             f"{self.name}, got {name!r}")
        return self.tiers[name]

    def fixed_for(self, tier: str) -> str | None:
        """What the tier holds fixed across cells: ``"steps"`` or ``"epochs"`` (pretrain),
        ``None`` for simulations."""
        return self.tier(tier).fixed or self.fixed

    def axes(self, tier: str) -> dict[str, list]:
        """The tier's grid: the recipe's axes, each replaced by the tier's axis of the same
        name, then the tier's other axes."""
        return {**self.grid, **self.tier(tier).grid}

    def points(self, tier: str) -> list[dict]:
        """The points of the tier's grid (axis -> level), the product of its axes in their
        order: one per cell of :meth:`cells` (named by :func:`cell_id`), before the seeds."""
        axes = self.axes(tier)
        return [dict(zip(axes, values, strict=True))
                for values in itertools.product(*axes.values())]

    def per_loss_for(self, tier: str) -> dict[str, dict]:
        """The tier's per-loss settings: the recipe's ``per_loss``, each loss's settings
        updated by the tier's."""
        chosen = self.tier(tier).per_loss
        return {loss: {**self.per_loss.get(loss, {}), **chosen.get(loss, {})}
                for loss in {**self.per_loss, **chosen}}

    def seeds(self, tier: str, seeds: int | None = None) -> list[int]:
        """The seeds of each cell, ``0 .. seeds - 1`` (``seeds`` overrides the tier's)."""
        count = self.tier(tier).seeds if seeds is None else seeds
        return list(range(check_count("seeds", count, 1)))

    def cells(self, tier: str, seeds: int | None = None, data_dir: str | None = None
              ) -> list[Cell]:
        """Every cell of ``tier``: the product of its axes (in their order) times the seeds.

        A cell's settings are the recipe's ``base``, then the tier's ``set``, then the cell's
        axis values (``data_dir``, if given, after the tier's ``set``; for the kinds that read
        data), then the per-loss settings of the cell's loss (:meth:`per_loss_for`). With ``fixed:
        steps`` every cell gets the same number of optimizer steps: ``epochs = ceil(steps /
        (train_size // batch_size))`` (the loop drops the last partial batch of an epoch, so a
        cell runs ``epochs * (train_size // batch_size)`` steps, the tier's ``steps`` rounded
        up to whole epochs), each dataset being loaded once to count its training images;
        ``warmup_epochs`` is capped at ``epochs`` (and the config caps the warm-up at half the
        run); a ``warmup_share`` keeps the same share of the steps at every batch size.
        """
        chosen = self.tier(tier)
        common = {**self.base, **chosen.set}
        if data_dir is not None and "data_dir" in checks.kind_settings(self.kind):
            common["data_dir"] = str(data_dir)  # for the kinds that read data
        evaluate = {**self.evaluate, **chosen.evaluate}
        cells = []
        for point in self.points(tier):
            settings = self._with_per_loss(tier, {**common, **point})
            settings, steps = self._settings(tier, settings)
            cells += [Cell(self.name, tier, cell_id(point), point, seed, settings, evaluate,
                           self.kind, steps) for seed in self.seeds(tier, seeds)]
        return cells

    def _with_per_loss(self, tier: str, settings: dict) -> dict:
        """``settings`` updated by the per-loss settings of their loss (a pretrain cell that
        sets no loss runs the config's default one)."""
        per_loss = self.per_loss_for(tier)
        if not per_loss:
            return settings
        loss = settings.get("loss")
        if loss is None and self.kind == "pretrain":
            loss = checks.pretrain_defaults()["loss"]
        return {**settings, **per_loss.get(str(loss), {})}

    def _settings(self, tier: str, settings: dict) -> tuple[dict, int | None]:
        """A cell's settings with ``epochs`` set by ``fixed: steps``, and its steps if known."""
        steps = self.tier(tier).steps
        if self.kind != "pretrain":
            if steps is not None:
                settings["steps"] = steps
            return settings, CELL_KINDS.get(self.kind).steps(settings)
        if self.fixed_for(tier) != "steps":
            return settings, None
        defaults = checks.pretrain_defaults()
        dataset = settings.get("dataset", defaults["dataset"])
        batch = settings.get("batch_size", defaults["batch_size"])
        size = train_size(dataset, settings.get("data_dir", defaults["data_dir"]))
        if not isinstance(batch, int) or not 2 <= batch <= size:
            raise ValueError(f"recipe {self.source}, tier {tier}: batch_size must be an integer "
                             f"in [2, {size}] (the {dataset} training set), got {batch!r}")
        # a registered dataset's size; the steps of a tier whose epochs follow from them
        assert size is not None and steps is not None
        per_epoch = size // batch
        epochs = math.ceil(steps / per_epoch)
        settings["epochs"] = epochs
        if settings.get("warmup_share") is None:
            warmup = settings.get("warmup_epochs", defaults["warmup_epochs"])
            settings["warmup_epochs"] = min(warmup, epochs)
        return settings, epochs * per_epoch


def cell_id(point: dict) -> str:
    """The cell's name from its axis values, ``axis=value`` joined by commas (``default``
    for a recipe without axes)."""
    return ",".join(f"{axis}={value}" for axis, value in point.items()) or "default"


@functools.cache
def train_size(dataset: str, data_dir: str) -> int:
    """The number of images pretraining on ``dataset`` reads (loaded once per process)."""
    from contrastkit.data import load_dataset, pretrain_split

    return len(load_dataset(dataset, pretrain_split(dataset), data_dir))


def recipe_names() -> list[str]:
    """The shipped recipes' names (``similarities/table1``, ...): the YAML files under the
    package's ``experiments/recipes/``, sorted."""
    if not RECIPES.is_dir():
        return []
    return sorted(path.relative_to(RECIPES).with_suffix("").as_posix()
                  for path in RECIPES.rglob(f"*{SUFFIX}"))


def load_recipe(name: str | Path) -> Recipe:
    """The recipe ``name``: a shipped one (:func:`recipe_names`) or the path of a YAML file;
    checked as a whole (unknown keys at any level, required keys, tiers, axes that are not
    settings, metric and claim names). Raises ``ValueError`` naming the file."""
    path, recipe_name, source = _locate(name)
    content = checks.read_yaml_mapping(path, source)
    return _build(recipe_name, source, content)


def _locate(name: str | Path) -> tuple[Path, str, str]:
    """The file, name and source label of recipe ``name`` (a shipped name or a path)."""
    shipped = RECIPES / f"{name}{SUFFIX}"
    if isinstance(name, str) and not name.endswith((SUFFIX, ".yml")) and shipped.is_file():
        return shipped, name, f"{name}{SUFFIX}"
    path = Path(name)
    if path.is_file():
        return path, path.stem, str(path)
    names = recipe_names()
    raise ValueError(f"recipe must be one of {', '.join(names) or '(none shipped)'} or the path "
                     f"of a recipe file; got {str(name)!r}")


def _build(name: str, source: str, content: dict) -> Recipe:
    """The :class:`Recipe` of the checked YAML ``content``."""
    checks.check_recipe(source, content)
    check_protocol_keys(source, content)
    tiers = {tier: Tier(name=tier, **{key: value for key, value in values.items()
                                      if value is not None})
             for tier, values in content["tiers"].items()}
    claims = tuple(ClaimSpec(**claim) for claim in content.get("claims") or ())
    top = {key: content[key] for key in ("fixed", "notes", "figure", "base", "grid", "per_loss",
                                         "evaluate") if content.get(key) is not None}
    protocol = content.get("protocol")
    return Recipe(name=name, source=source, title=content["title"],
                  reproduces=content["reproduces"], kind=content["kind"],
                  metrics=tuple(content["metrics"]), tiers=tiers,
                  paper=tuple(content.get("paper") or ()), claims=claims,
                  protocol=None if protocol is None else Protocol(
                      source=protocol["source"], settings=dict(protocol["settings"])), **top)
