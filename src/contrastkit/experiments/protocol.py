"""A recipe's cells against its paper's training protocol.

A recipe states the paper's protocol (:class:`~.recipe.Protocol`: the optimizer, the
learning-rate rule, the warm-up, the weight decay, the regularizers' weights, each loss's
temperature, ... as the authors ran them), and every tier either follows it or declares, for
each setting it departs from, the reason (``deviations:``). :func:`deviations` resolves every
cell of a tier and compares it with the protocol; :func:`settings_table` summarizes the
comparison for a report, one row per setting; :func:`check` raises on any deviation the tier
does not declare, and on any declared one the tier does not take.

What a cell's value of a setting is:

- a ``pretrain`` cell: its settings over ``PretrainConfig``'s defaults, so a default counts
  (:func:`~.recipe_checks.pretrain_settings`), with two settings read for what they do:
  ``base_lr`` is the peak base learning rate (``PretrainConfig.peak_base_lr``: unset means the
  optimizer's default, 0.3 for SGD and LARS, 1e-3 for AdamW), and ``warmup_share`` the share of
  the run's optimizer steps the warm-up takes (``warmup_share`` if set, else
  ``min(warmup_epochs, epochs / 2) / epochs``, so 10 warm-up epochs of 200 follow a protocol of
  0.05);
- a cell of another kind: its settings over the kind's defaults if the kind exposes them (a
  ``defaults`` attribute of its ``CellKind``, a mapping or a function returning one), else its
  settings alone; a setting the cell does not set is ``None``.

A cell follows a protocol value if it equals it (numbers up to rounding), is one of a list's
values, or, for a per-loss value ``{loss: value}``, follows the value of the cell's loss (a
cell whose loss the mapping does not name is not compared: the paper states nothing for it).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from . import recipe_checks as checks
from .kinds import CELL_KINDS
from .recipe import Cell, Recipe

#: The settings a pretrain cell is compared on by what they do rather than as written
#: (see the module's text).
DERIVED = ("base_lr", "warmup_share")


@dataclass(frozen=True)
class Deviation:
    """One cell's departure from one protocol setting: the ``paper``'s value (for a per-loss
    value, the one of the cell's loss), ``ours`` (the cell's, resolved), and the tier's declared
    ``reason``, ``None`` if the tier does not declare it."""

    cell_id: str
    setting: str
    paper: object
    ours: object
    reason: str | None

    @property
    def declared(self) -> bool:
        return self.reason is not None

    def describe(self) -> str:
        """``cell <id>: <setting> paper <value>, ours <value>`` and the reason if declared."""
        text = (f"cell {self.cell_id}: {self.setting} paper {_show(self.paper)}, ours "
                f"{_show(self.ours)}")
        return text + (f" (declared: {self.reason})" if self.declared else " (undeclared)")


def resolved_settings(cell: Cell) -> dict:
    """Every setting of ``cell`` as it runs (see the module's text for what counts)."""
    if cell.kind != "pretrain":
        return {**kind_defaults(cell.kind), **cell.settings}
    from contrastkit.train.config import DEFAULT_BASE_LR

    settings = checks.pretrain_settings(cell.settings)
    if settings["base_lr"] is None:
        settings["base_lr"] = DEFAULT_BASE_LR[settings["optimizer"]]
    if settings["warmup_share"] is None:
        epochs = settings["epochs"]
        settings["warmup_share"] = min(settings["warmup_epochs"], epochs / 2) / epochs
    return settings


def kind_defaults(kind: str) -> dict:
    """The default settings of the cell kind ``kind`` if it exposes them (a ``defaults``
    mapping, or a function returning one, on its ``CellKind``), else ``{}``."""
    defaults = getattr(CELL_KINDS.get(kind), "defaults", None)
    if callable(defaults):
        defaults = defaults()
    return dict(defaults or {})


def paper_value(stated: object, settings: dict) -> tuple[bool, object]:
    """``(applies, value)``: the protocol's value ``stated`` for a cell with ``settings``; a
    per-loss value applies only to the losses it names."""
    if isinstance(stated, dict):
        loss = settings.get("loss")
        return (loss in stated, stated.get(loss))
    return True, stated


def follows(paper: object, ours: object) -> bool:
    """Whether ``ours`` follows the paper's value: equal (numbers up to a relative 1e-9), or
    equal to one of a list's values."""
    if isinstance(paper, list):
        return any(follows(value, ours) for value in paper)
    if isinstance(paper, bool) or isinstance(ours, bool):
        return type(paper) is type(ours) and paper == ours
    if isinstance(paper, numbers.Real) and isinstance(ours, numbers.Real):
        return paper == ours or math.isclose(paper, ours, rel_tol=1e-9, abs_tol=1e-12)
    return paper == ours


def _cells(recipe: Recipe, tier: str, data_dir: str | None) -> list[tuple[Cell, dict]]:
    """One cell per grid point of ``tier`` (seeds do not change settings), resolved."""
    return [(cell, resolved_settings(cell))
            for cell in recipe.cells(tier, seeds=1, data_dir=data_dir)]


def deviations(recipe: Recipe, tier: str, data_dir: str | None = None) -> list[Deviation]:
    """Every departure of a cell of ``tier`` from the recipe's protocol, cell by cell in the
    grid's order, settings in the protocol's order; each with the tier's declared reason or
    ``None``. Empty for a recipe without a protocol. Resolving the cells of a ``fixed: steps``
    tier reads its datasets to count their images (``data_dir`` as for
    :meth:`~.recipe.Recipe.cells`)."""
    if recipe.protocol is None:
        return []
    declared = recipe.tier(tier).deviations
    found = []
    for cell, settings in _cells(recipe, tier, data_dir):
        for setting, stated in recipe.protocol.settings.items():
            applies, paper = paper_value(stated, settings)
            ours = settings.get(setting)
            if applies and not follows(paper, ours):
                found.append(Deviation(cell.cell_id, setting, paper, ours,
                                       declared.get(setting)))
    return found


def settings_table(recipe: Recipe, tier: str, data_dir: str | None = None) -> list[dict]:
    """One row per setting of the recipe's protocol: ``{"setting", "paper", "ours",
    "reason"}``. ``paper`` is the protocol's value as the recipe states it (a value, a list, or
    a mapping loss: value); ``ours`` the tier's: the one value its cells share, else the sorted
    list of their distinct values (for a per-loss setting, a mapping loss: that, for each loss
    the mapping names that the tier runs); ``reason`` the tier's declared reason for departing,
    or ``None``. Empty for a recipe without a protocol."""
    if recipe.protocol is None:
        return []
    declared = recipe.tier(tier).deviations
    cells = _cells(recipe, tier, data_dir)
    rows = []
    for setting, paper in recipe.protocol.settings.items():
        if isinstance(paper, dict):
            ours: object = {
                loss: _summary([s.get(setting) for _, s in cells if s.get("loss") == loss])
                for loss in paper if any(s.get("loss") == loss for _, s in cells)}
        else:
            ours = _summary([settings.get(setting) for _, settings in cells])
        rows.append({"setting": setting, "paper": paper, "ours": ours,
                     "reason": declared.get(setting)})
    return rows


def check(recipe: Recipe, tier: str, data_dir: str | None = None) -> None:
    """Raise a ``ValueError`` naming the recipe, the tier and each problem: a cell's deviation
    from the protocol that the tier does not declare (cell, setting, paper's value, ours), and a
    declared deviation that no cell of the tier takes (a stale reason)."""
    found = deviations(recipe, tier, data_dir)
    problems = [f"undeclared deviation: {d.describe()}" for d in found if not d.declared]
    taken = {d.setting for d in found}
    paper = recipe.protocol.settings if recipe.protocol is not None else {}
    problems += [f"tiers.{tier}.deviations.{setting} is declared, but every cell follows the "
                 f"paper's {_show(paper[setting])}"
                 for setting in recipe.tier(tier).deviations if setting not in taken]
    if problems:
        raise ValueError(f"recipe {recipe.name}, tier {tier}: "
                         f"{len(problems)} problem(s) with the paper's protocol ("
                         f"{recipe.source}: declare each deviation with its reason in "
                         f"tiers.{tier}.deviations, or follow the protocol):\n  "
                         + "\n  ".join(problems))


def _summary(values: list) -> object:
    """The one value of ``values`` if they are all equal, else their distinct values sorted."""
    distinct: list = []
    for value in values:
        if not any(follows(value, seen) and follows(seen, value) for seen in distinct):
            distinct.append(value)
    if len(distinct) == 1:
        return distinct[0]
    return sorted(distinct, key=_order)


def _order(value: object) -> tuple:
    """Numbers in order, then names, then anything else (``None`` first)."""
    if value is None:
        return (0, 0, "")
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return (1, float(value), "")
    return (2, 0, str(value))


def _show(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)
