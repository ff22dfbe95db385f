"""The checks of a recipe's ``protocol`` (the paper's training protocol), its tiers'
``deviations`` from it, and its ``per_loss`` settings (see :mod:`.recipe` and
:mod:`.protocol`); :mod:`.recipe_checks` checks the rest of the format. Each error is a
``ValueError`` naming the file and the key."""

from __future__ import annotations

import functools
import numbers

from .recipe_checks import check_keys, check_setting, kind_settings, pretrain_defaults

PROTOCOL_KEYS = ("source", "settings")


def check_protocol_keys(source: str, content: dict) -> None:
    """Check the ``protocol``, the tiers' ``deviations`` and the ``per_loss`` settings of a
    recipe's YAML ``content`` (whose other keys :func:`.recipe_checks.check_recipe` checked)."""
    kind = content["kind"]
    settings = kind_settings(kind)
    axes = set(content.get("grid") or {})
    for tier in content["tiers"].values():
        axes |= set(tier.get("grid") or {})
    losses = _Losses(content)
    _check_per_loss(source, "per_loss", content.get("per_loss"), settings, kind, losses, axes)
    for name, tier in content["tiers"].items():
        _check_per_loss(source, f"tiers.{name}.per_loss", tier.get("per_loss"), settings, kind,
                        losses, axes)
    _check_protocol(source, content, settings, kind, losses)


def recipe_losses(content: dict) -> set:
    """The values of ``loss`` that a recipe's cells can take: in its ``base``, ``grid`` and
    every tier's ``set`` and ``grid`` (for ``kind: pretrain`` without any, the config's
    default loss)."""
    losses = set()
    scopes = [content] + list((content.get("tiers") or {}).values())
    for scope in scopes:
        for where in ("base", "set"):
            value = (scope.get(where) or {}).get("loss")
            if value is not None:
                losses.add(value)
        losses.update((scope.get("grid") or {}).get("loss") or ())
    if not losses and content.get("kind") == "pretrain":
        losses.add(pretrain_defaults()["loss"])
    return losses


class _Losses:
    """:func:`recipe_losses` of a recipe, computed when first asked (the config's default
    loss needs torch, which checking most recipes does not)."""

    def __init__(self, content: dict):
        self.content = content

    @functools.cached_property
    def values(self) -> set:
        return recipe_losses(self.content)

    def check(self, source: str, where: str, loss: object) -> None:
        if loss not in self.values:
            raise ValueError(f"recipe {source}: {where} names loss {loss!r}, which the recipe "
                             f"does not run ({', '.join(sorted(map(str, self.values)))})")


def _check_per_loss(source: str, where: str, per_loss: object, valid: tuple[str, ...],
                    kind: str, losses: _Losses, axes: set) -> None:
    """``per_loss`` maps a loss the recipe runs to settings the run takes, none of them a grid
    axis (the cell's name would not say its value) nor ``loss`` itself."""
    if per_loss is None:
        return
    if "loss" not in valid:
        raise ValueError(f"recipe {source}: {where} applies to kinds with a loss setting; a "
                         f"{kind} cell has none")
    if not isinstance(per_loss, dict) or not per_loss:
        raise ValueError(f"recipe {source}: {where} must be a mapping of loss: {{setting: "
                         f"value}}, got {per_loss!r}")
    for loss, settings in per_loss.items():
        losses.check(source, where, loss)
        if not isinstance(settings, dict) or not settings:
            raise ValueError(f"recipe {source}: {where}.{loss} must be a non-empty mapping of "
                             f"setting: value, got {settings!r}")
        for key in settings:
            check_setting(source, key, valid, kind, f"{key!r} in {where}.{loss}")
            if key == "loss" or key in axes:
                raise ValueError(f"recipe {source}: {key!r} in {where}.{loss} is "
                                 + ("the loss itself" if key == "loss" else "a grid axis")
                                 + "; a per-loss setting may be neither")


def _check_protocol(source: str, content: dict, valid: tuple[str, ...], kind: str,
                    losses: _Losses) -> None:
    """``protocol`` says where the paper states its training protocol (``source``) and the
    paper's value of each ``settings`` key, a setting of the run: a value, a list (any of
    them), or a mapping of loss: value (a per-loss value). A tier's ``deviations`` give the
    reason, in words, for each setting of the protocol the tier departs from."""
    protocol = content.get("protocol")
    tiers = content["tiers"]
    if protocol is None:
        for name, tier in tiers.items():
            if tier.get("deviations") is not None:
                raise ValueError(f"recipe {source}: tiers.{name}.deviations needs a protocol "
                                 f"(the paper's settings it departs from) at the top level")
        return
    check_keys(source, protocol, PROTOCOL_KEYS, "in protocol")
    text = protocol.get("source")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"recipe {source}: protocol.source must say, in words, where the paper "
                         f"states its protocol, got {text!r}")
    stated = protocol.get("settings")
    if not isinstance(stated, dict):
        raise ValueError(f"recipe {source}: protocol.settings must be a mapping of setting: the "
                         f"paper's value (empty if the paper states none), got {stated!r}")
    for key, value in stated.items():
        check_setting(source, key, valid, kind, f"{key!r} in protocol.settings")
        _check_protocol_value(source, f"protocol.settings.{key}", value, losses)
    for name, tier in tiers.items():
        where = f"tiers.{name}.deviations"
        deviations = tier.get("deviations")
        if deviations is None:
            continue
        if not isinstance(deviations, dict):
            raise ValueError(f"recipe {source}: {where} must be a mapping of setting: reason, "
                             f"got {deviations!r}")
        for key, reason in deviations.items():
            if key not in stated:
                raise ValueError(f"recipe {source}: {where} names {key!r}, which "
                                 f"protocol.settings does not state (it states "
                                 f"{', '.join(map(str, stated)) or 'nothing'})")
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f"recipe {source}: {where}.{key} must be the reason, in "
                                 f"words, why the tier departs from the paper, got {reason!r}")


def _check_protocol_value(source: str, where: str, value: object,
                          losses: _Losses | None) -> None:
    """A protocol value: a plain value, a non-empty list of them, or ``{loss: either}`` for
    losses the recipe runs."""
    if isinstance(value, dict) and losses is not None:
        if not value:
            raise ValueError(f"recipe {source}: {where} is an empty mapping; give the paper's "
                             f"value for each loss")
        for loss, each in value.items():
            losses.check(source, where, loss)
            _check_protocol_value(source, f"{where}.{loss}", each, None)
        return
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (str, numbers.Real)) for v in values):
        raise ValueError(f"recipe {source}: {where} must be the paper's value (a number or a "
                         f"name), a non-empty list of them, or a mapping of loss: value; "
                         f"got {value!r}")
