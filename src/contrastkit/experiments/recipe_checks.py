"""The checks of a recipe file (see :mod:`.recipe`): every key known, every required key
present, settings and axes that the run takes, metrics that a cell records, claims that refer
to the recipe's axes and metrics (the ``protocol``, tiers' ``deviations`` and ``per_loss``:
:mod:`.protocol_checks`). Each error is a ``ValueError`` naming the file and the key."""

from __future__ import annotations

import functools
import math
import numbers
import re
from pathlib import Path

from contrastkit.experiments.claim_specs import CLAIM_KEYS, TESTS, parse_claim
from contrastkit.experiments.figures import FIGURES
from contrastkit.experiments.kinds import CELL_KINDS
from contrastkit.experiments.results import same_level
from contrastkit.yaml_files import read_yaml

TOP_KEYS = ("title", "reproduces", "kind", "fixed", "notes", "figure", "protocol", "base",
            "grid", "per_loss", "metrics", "evaluate", "paper", "claims", "tiers")
REQUIRED_KEYS = ("title", "reproduces", "kind", "metrics", "tiers")
TIER_KEYS = ("seeds", "estimate_minutes", "measured", "steps", "set", "grid", "per_loss",
             "evaluate", "fixed", "notes", "deviations")
#: A tier's ``measured``: its whole wall time (minutes) on ``cores`` cores with ``--jobs``.
MEASURED_KEYS = ("minutes", "cores", "jobs")
TIER_NAMES = ("quick", "cpu", "paper")
CLAIM_REQUIRED = ("id", "text", "metric", "test")
CLAIM_TESTS = tuple(TESTS)
FIXED = ("steps", "epochs")
#: What a pretrain cell records: ``evaluate_run``'s results (an image-text run's zero-shot and
#: retrieval too, a text-pair run's retrieval of its held-out queries), ``train_*``, the last
#: training epoch's in-batch values (a SigLIP run's phase record too), and the training's time
#: and peak memory.
PRETRAIN_METRICS = ("linear_top1", "linear_top5", "knn_top1", "knn_top5", "neg_sim_var",
                    "neg_sim_mean", "pos_sim_mean", "margin_fraction", "train_loss",
                    "train_neg_sim_var", "train_neg_sim_mean", "train_pos_sim_mean",
                    "train_seconds", "train_peak_memory_mib", "converged", "convergence_rule",
                    "half_linear_top1", "zero_shot_top1", "image_to_text_r1",
                    "image_to_text_r5", "image_to_text_r10", "text_to_image_r1", "text_to_image_r5",
                    "text_to_image_r10", "train_siglip_t", "train_siglip_b",
                    "train_siglip_optimum_s", "train_siglip_predicted_pos",
                    "train_siglip_predicted_neg", "train_siglip_measured_pos",
                    "train_siglip_measured_neg", "query_to_corpus_r1", "query_to_corpus_r5",
                    "query_to_corpus_r10", "query_to_corpus_mrr10", "query_to_corpus_ndcg10",
                    "query_to_corpus_map_r")
#: Config keys that the runner sets for each cell, so a recipe may not.
RUNNER_KEYS = ("runs_dir", "name", "seed", "progress")
#: ``evaluate_run`` arguments a recipe may set (the runner sets the others).
EVALUATE_KEYS = ("pairs", "linear_solver", "linear_epochs", "knn_k", "knn_temperature")
SAFE_VALUE = re.compile(r"[A-Za-z0-9_.+-]+")


def read_yaml_mapping(path: Path, source: str) -> dict:
    """The mapping in the recipe file ``path``; a syntax error names ``source`` and the line."""
    content = read_yaml(path, f"recipe {source}")
    if not isinstance(content, dict):
        raise ValueError(f"recipe {source} must hold a mapping of key: value")
    return content


@functools.cache
def pretrain_defaults() -> dict:
    """``PretrainConfig``'s default settings."""
    from contrastkit.train.config import PretrainConfig

    return PretrainConfig().to_dict()


def pretrain_settings(settings: dict) -> dict:
    """A pretrain cell's ``settings`` over ``PretrainConfig``'s defaults, checked and typed
    (a ``ValueError`` names a bad one)."""
    from contrastkit.train.config import PretrainConfig

    return PretrainConfig().with_overrides(settings).to_dict()


@functools.cache
def evaluate_defaults() -> dict:
    """The defaults of the ``evaluate_run`` arguments a recipe may set
    (:data:`EVALUATE_KEYS`)."""
    import inspect

    from contrastkit.evaluate import evaluate_run

    parameters = inspect.signature(evaluate_run).parameters
    return {key: parameters[key].default for key in EVALUATE_KEYS}


def pretrain_keys() -> tuple[str, ...]:
    """The settings a pretrain recipe may set: the config's keys but the runner's."""
    return tuple(key for key in pretrain_defaults() if key not in RUNNER_KEYS)


def kind_settings(kind: str) -> tuple[str, ...]:
    """The settings a recipe of ``kind`` may set."""
    return pretrain_keys() if kind == "pretrain" else CELL_KINDS.get(kind).settings()


def kind_metrics(kind: str) -> tuple[str, ...]:
    """The metrics a cell of ``kind`` records."""
    return PRETRAIN_METRICS if kind == "pretrain" else CELL_KINDS.get(kind).metrics


def kind_point_axes(kind: str) -> tuple[str, ...]:
    """The axes of the points a cell of ``kind`` records (none for pretrain)."""
    return () if kind == "pretrain" else CELL_KINDS.get(kind).point_axes


def check_recipe(source: str, content: dict) -> None:
    """Check a recipe's whole YAML ``content`` (see :mod:`.recipe`)."""
    check_keys(source, content, TOP_KEYS, "at the top level")
    missing = [key for key in REQUIRED_KEYS if content.get(key) is None]
    if missing:
        raise ValueError(f"recipe {source}: missing required key(s) {', '.join(missing)}")
    kind = _choice(source, "kind", content["kind"], ("pretrain", *CELL_KINDS.names()))
    _check_figure(source, content.get("figure"))
    settings = kind_settings(kind)
    _check_settings(source, "base", content.get("base"), settings, kind)
    _check_grid(source, "grid", content.get("grid"), settings, kind)
    _check_metrics(source, content["metrics"], kind)
    _check_evaluate(source, "evaluate", content.get("evaluate"), kind)
    _check_tiers(source, content, settings)
    levels = grid_levels(content)
    axes = set(levels) | set(kind_point_axes(kind))
    _check_paper(source, content.get("paper"), axes, content["metrics"])
    _check_claims(source, content.get("claims"), axes, content["metrics"])
    _check_claim_levels(source, content.get("claims") or [], levels)


def grid_levels(content: dict) -> dict[str, list]:
    """Each grid axis of a recipe's checked ``content`` -> its levels in the recipe's grid and
    every tier's, in their order (a level once)."""
    levels: dict[str, list] = {}
    for grid in [content.get("grid") or {}, *(tier.get("grid") or {}
                                               for tier in content["tiers"].values())]:
        for axis, values in grid.items():
            known = levels.setdefault(axis, [])
            known += [value for value in values if not any(same_level(value, level)
                                                             for level in known)]
    return levels


def _check_figure(source: str, figure: object) -> None:
    """``figure`` is a figure's name, ``none``, or a list of figures' names."""
    if figure is None:
        return
    names = [figure] if isinstance(figure, str) else figure
    valid = (*FIGURES.names(), "none")
    if not isinstance(names, list) or not names:
        raise ValueError(f"recipe {source}: figure must be one of {', '.join(valid)} or a "
                         f"list of them, got {figure!r}")
    for name in names:
        _choice(source, "figure", name, valid)


def check_keys(source: str, mapping: object, valid: tuple[str, ...], where: str) -> dict:
    """``mapping`` is a mapping whose keys are all in ``valid``."""
    if not isinstance(mapping, dict):
        raise ValueError(f"recipe {source}: {where.removeprefix('in ')} must be a mapping, "
                         f"got {mapping!r}")
    for key in mapping:
        if key not in valid:
            raise ValueError(f"recipe {source}: unknown key {key!r} {where}; valid keys: "
                             f"{', '.join(valid)}")
    return mapping


def _choice(source: str, key: str, value: object, valid: tuple[str, ...]) -> str:
    if value not in valid:
        raise ValueError(f"recipe {source}: {key} must be one of {', '.join(valid)}, "
                         f"got {value!r}")
    return value


def _check_settings(source: str, where: str, settings: object, valid: tuple[str, ...],
                    kind: str) -> None:
    """Every key of ``settings`` (``base`` or a tier's ``set``) is a setting of the run."""
    if settings is None:
        return
    if not isinstance(settings, dict):
        raise ValueError(f"recipe {source}: {where} must be a mapping of settings")
    for key in settings:
        check_setting(source, key, valid, kind, f"{key!r} in {where}")


def check_setting(source: str, key: object, valid: tuple[str, ...], kind: str,
                  named: str) -> None:
    """``key`` (``named`` so in errors) is a setting the recipe may set."""
    if key in RUNNER_KEYS and kind == "pretrain":
        raise ValueError(f"recipe {source}: {named} is set by the runner for each cell "
                         f"(runs_dir, name, seed, progress); remove it")
    if key not in valid:
        what = "config key" if kind == "pretrain" else f"{kind} setting"
        raise ValueError(f"recipe {source}: {named} is not a {what}; valid keys: "
                         f"{', '.join(valid)}")


def _check_grid(source: str, where: str, grid: object, valid: tuple[str, ...],
                kind: str) -> None:
    """Every axis of ``grid`` is a setting, with a non-empty list of plain values."""
    if grid is None:
        return
    if not isinstance(grid, dict):
        raise ValueError(f"recipe {source}: {where} must be a mapping of axis: [values]")
    for axis, values in grid.items():
        check_setting(source, axis, valid, kind, f"grid axis {axis!r} in {where}")
        if not isinstance(values, list) or not values:
            raise ValueError(f"recipe {source}: {where}.{axis} must be a non-empty list of "
                             f"values, got {values!r}")
        for value in values:
            if not isinstance(value, (str, numbers.Real)) or not SAFE_VALUE.fullmatch(str(value)):
                raise ValueError(f"recipe {source}: {where}.{axis} holds {value!r}; axis values "
                                 f"must be numbers or names of letters, digits, _ . + -")
        if len(set(map(str, values))) < len(values):
            raise ValueError(f"recipe {source}: {where}.{axis} repeats a value: {values}")


def _check_metrics(source: str, metrics: object, kind: str) -> None:
    known = kind_metrics(kind)
    if not isinstance(metrics, list) or not metrics:
        raise ValueError(f"recipe {source}: metrics must be a non-empty list of metric names")
    for metric in metrics:
        if metric not in known:
            raise ValueError(f"recipe {source}: unknown metric {metric!r} in metrics; a "
                             f"{kind} cell records {', '.join(known)}")


def _check_evaluate(source: str, where: str, evaluate: object, kind: str) -> None:
    if evaluate is None:
        return
    if kind != "pretrain":
        raise ValueError(f"recipe {source}: {where} applies to kind: pretrain only")
    check_keys(source, evaluate, EVALUATE_KEYS, f"in {where}")


def _check_tiers(source: str, content: dict, settings: tuple[str, ...]) -> None:
    """The tiers are among quick, cpu, paper (all three for pretrain; at least quick for a
    kind other than pretrain), each with its keys, seeds, estimate and what it holds fixed."""
    tiers = check_keys(source, content["tiers"], TIER_NAMES, "in tiers")
    kind = content["kind"]
    required = TIER_NAMES if kind == "pretrain" else ("quick",)
    missing = [name for name in required if name not in tiers]
    if missing:
        raise ValueError(f"recipe {source}: missing tier(s) {', '.join(missing)} in tiers; a "
                         f"{kind} recipe needs {', '.join(required)}")
    for name, tier in tiers.items():
        where = f"tiers.{name}"
        check_keys(source, tier, TIER_KEYS, f"in {where}")
        for key in ("seeds", "estimate_minutes"):
            if tier.get(key) is None:
                raise ValueError(f"recipe {source}: missing required key {key!r} in {where}")
        _number(source, f"{where}.seeds", tier["seeds"], integer=True, minimum=1)
        _number(source, f"{where}.estimate_minutes", tier["estimate_minutes"], minimum=0)
        _check_measured(source, f"{where}.measured", tier.get("measured"))
        _check_settings(source, f"{where}.set", tier.get("set"), settings, kind)
        _check_grid(source, f"{where}.grid", tier.get("grid"), settings, kind)
        _check_evaluate(source, f"{where}.evaluate", tier.get("evaluate"), kind)
        _check_fixed(source, where, content, tier)


def _check_measured(source: str, where: str, measured) -> None:
    """``measured`` is absent, or a mapping of :data:`MEASURED_KEYS`: minutes >= 0, cores and
    jobs >= 1."""
    if measured is None:
        return
    if not isinstance(measured, dict):
        raise ValueError(f"recipe {source}: {where} must be a mapping of "
                         f"{', '.join(MEASURED_KEYS)}, got {measured!r}")
    check_keys(source, measured, MEASURED_KEYS, f"in {where}")
    for key in MEASURED_KEYS:
        if key not in measured:
            raise ValueError(f"recipe {source}: missing required key {key!r} in {where}")
    _number(source, f"{where}.minutes", measured["minutes"], minimum=0)
    _number(source, f"{where}.cores", measured["cores"], integer=True, minimum=1)
    _number(source, f"{where}.jobs", measured["jobs"], integer=True, minimum=1)


def _check_fixed(source: str, where: str, content: dict, tier: dict) -> None:
    """A pretrain tier holds ``steps`` (with its ``steps:``) or ``epochs`` fixed; a
    cell of another kind holds nothing fixed (its ``steps``, if any, are a setting)."""
    steps = tier.get("steps")
    if steps is not None:
        _number(source, f"{where}.steps", steps, integer=True, minimum=1)
    if content["kind"] != "pretrain":
        if content.get("fixed") is not None or tier.get("fixed") is not None:
            raise ValueError(f"recipe {source}: fixed applies to kind: pretrain only")
        return
    fixed = tier.get("fixed") or content.get("fixed")
    if fixed is None:
        raise ValueError(f"recipe {source}: missing required key 'fixed' (steps or epochs), "
                         f"at the top level or in {where}")
    _choice(source, f"{where}.fixed" if tier.get("fixed") else "fixed", fixed, FIXED)
    scope = {**(content.get("base") or {}), **(tier.get("set") or {}), **(tier.get("grid") or {})}
    if fixed == "steps" and steps is None:
        raise ValueError(f"recipe {source}: {where} holds steps fixed and needs 'steps'")
    if fixed == "steps" and "epochs" in {*scope, *(content.get("grid") or {})}:
        raise ValueError(f"recipe {source}: {where} holds steps fixed, so its epochs are "
                         f"computed per cell; remove 'epochs' from base, set and grid")
    if fixed == "epochs" and steps is not None:
        raise ValueError(f"recipe {source}: {where} holds epochs fixed; set epochs in its "
                         f"'set' instead of 'steps'")


def _number(source: str, where: str, value: object, integer: bool = False,
            minimum: float = 0) -> None:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        what = ("an integer" if integer else "a number") + (
            f" >= {minimum}" if minimum > -math.inf else "")
        raise ValueError(f"recipe {source}: {where} must be {what}, got {value!r}")


def _check_paper(source: str, paper: object, axes: set, metrics: list) -> None:
    """Each of the paper's values is ``{<axis>: value, ..., metric, value}``."""
    if paper is None:
        return
    if not isinstance(paper, list):
        raise ValueError(f"recipe {source}: paper must be a list of {{axis values, metric, "
                         f"value}}")
    for index, entry in enumerate(paper):
        where = f"paper[{index}]"
        check_keys(source, entry, (*sorted(axes), "metric", "value"), f"in {where}")
        if entry.get("metric") not in metrics:
            raise ValueError(f"recipe {source}: {where}.metric must be one of the recipe's "
                             f"metrics ({', '.join(metrics)}), got {entry.get('metric')!r}")
        _number(source, f"{where}.value", entry.get("value"), minimum=-math.inf)


def _check_claims(source: str, claims: object, axes: set, metrics: list) -> None:
    """Each claim has its required keys, a known test, the recipe's metrics and axes."""
    if claims is None:
        return
    if not isinstance(claims, list):
        raise ValueError(f"recipe {source}: claims must be a list")
    seen = set()
    for index, claim in enumerate(claims):
        where = f"claims[{index}]"
        check_keys(source, claim, CLAIM_KEYS, f"in {where}")
        missing = [key for key in CLAIM_REQUIRED if claim.get(key) is None]
        if missing:
            raise ValueError(f"recipe {source}: missing required key(s) {', '.join(missing)} "
                             f"in {where}")
        if claim["id"] in seen:
            raise ValueError(f"recipe {source}: claim id {claim['id']!r} is used twice")
        seen.add(claim["id"])
        _choice(source, f"{where}.test", claim["test"], CLAIM_TESTS)
        target = claim.get("target")
        for key, name in (("metric", claim["metric"]),
                          ("target", target if isinstance(target, str) else None)):
            if name is not None and name not in metrics:
                raise ValueError(f"recipe {source}: {where}.{key} must be one of the recipe's "
                                 f"metrics ({', '.join(metrics)}), got {name!r}")
        _check_claim_axes(source, where, claim, axes)
        try:
            parse_claim(claim)  # the keys fit the test, the numbers are in range
        except ValueError as error:
            raise ValueError(f"recipe {source}: {where}: {error}") from None


def _check_claim_axes(source: str, where: str, claim: dict, axes: set) -> None:
    named = [claim.get(key) for key in ("along", "across")] + _for_each(source, where, claim)
    for key in ("where", "treatment", "control"):
        named += list(check_keys(source, claim.get(key) or {}, tuple(sorted(axes)),
                                  f"in {where}.{key} (keys are axes)"))
    for axis in named:
        if axis is not None and axis not in axes:
            raise ValueError(f"recipe {source}: {where} names {axis!r}, which is not an axis "
                             f"of the grid ({', '.join(sorted(axes)) or 'none'})")


def _check_claim_levels(source: str, claims: list, levels: dict[str, list]) -> None:
    """Each level a claim names (``where``, ``treatment``, ``control``) of a grid axis is one
    of that axis's levels in the recipe's grid or a tier's (the dry run checks each tier's
    own; a point axis's levels are known only when a cell runs)."""
    for index, claim in enumerate(claims):
        for key in ("where", "treatment", "control"):
            for axis, value in (claim.get(key) or {}).items():
                known = levels.get(axis)
                if known is not None and not any(same_level(value, level) for level in known):
                    raise ValueError(f"recipe {source}: claims[{index}].{key} names "
                                     f"{axis}={value!r}, which is not a level of the grid's "
                                     f"{axis} ({', '.join(map(repr, known))})")


def _for_each(source: str, where: str, claim: dict) -> list:
    """The axes of a claim's ``for_each``: one name or a non-empty list of distinct names."""
    for_each = claim.get("for_each")
    if for_each is None:
        return []
    axes = [for_each] if isinstance(for_each, str) else for_each
    if not isinstance(axes, list) or not axes or not all(isinstance(a, str) for a in axes):
        raise ValueError(f"recipe {source}: {where}.for_each must be an axis name or a "
                         f"non-empty list of axis names, got {for_each!r}")
    if len(set(axes)) < len(axes):
        raise ValueError(f"recipe {source}: {where}.for_each repeats an axis: {axes}")
    return axes
