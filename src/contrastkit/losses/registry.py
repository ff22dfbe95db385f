"""The one registry of losses: ``register(name)``, ``get(name)``, ``names()``, ``build(name)``.

Every loss module class registers itself with a decorator and declares what it is through
class attributes of :class:`~contrastkit.losses.ContrastiveLoss`:

- ``hyperparameters``: the constructor arguments a trainer or a command may set
  (``("temperature",)`` for SimCLR, ``("scale", "bias")`` for SigLIP);
- ``uses_labels``: whether ``forward(u, v, labels)`` needs class labels;
- ``supports_chunking``: whether it takes ``chunk_size=`` (memory ``O(B * chunk_size)``);
- ``supports_distributed``: whether it takes ``distributed=True``, under which each process
  computes its share of the global-batch loss (its rows against the gathered batch);
- ``supports_negatives``: whether ``forward`` and ``compute`` take explicit ``negatives=``
  (:mod:`contrastkit.losses.explicit_negatives`);
- ``training_options``: constructor options a training run fixes (e.g. the exact
  importance-weighting estimator of the hard-negative losses, which draws no random numbers).

The trainer (``contrastkit pretrain loss=NAME``), the simulator, ``contrastkit demo``, the CLI's
choices and the docs' table of losses all read this registry, so a loss registered by user
code works everywhere a name is accepted::

    from contrastkit import losses

    @losses.register("mine")
    class Mine(losses.ContrastiveLoss):
        hyperparameters = ("temperature",)

        def __init__(self, temperature=0.1):
            super().__init__()
            self.temperature = temperature

        def forward(self, u, v, labels=None):
            return losses.info_nce(u, v, temperature=self.temperature)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TypeVar

from torch import nn

from contrastkit.registry import Registry

from .base import ContrastiveLoss

LOSSES: Registry[type[ContrastiveLoss]] = Registry("loss")
LossClass = TypeVar("LossClass", bound=type[ContrastiveLoss])


def register(name: str, *, regularizer: bool = False) -> Callable[[LossClass], LossClass]:
    """Class decorator: register a :class:`ContrastiveLoss` subclass under ``name``.

    ``name`` also becomes the class's ``name`` (the key its value is logged under).
    ``regularizer=True`` marks a term that is added to a loss rather than trained alone (VRNS,
    LMCL's polarization); :func:`names` lists those only when asked.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a Python identifier such as 'my_loss', got {name!r}")

    def decorate(cls: LossClass) -> LossClass:
        if not (isinstance(cls, type) and issubclass(cls, ContrastiveLoss)):
            raise ValueError(f"register({name!r}) decorates a subclass of "
                             f"contrastkit.losses.ContrastiveLoss, got {cls!r}")
        _check_declared_hyperparameters(name, cls)
        LOSSES.register(name, cls)
        cls.name = name
        cls.regularizer = regularizer
        return cls

    return decorate


def get(name: str) -> type[ContrastiveLoss]:
    """The loss class registered as ``name``."""
    return LOSSES.get(name)


def names(regularizers: bool = False) -> tuple[str, ...]:
    """The registered losses, sorted; with ``regularizers=True`` also the terms that are only
    added to a loss (VRNS, polarization)."""
    return LOSSES.names(None if regularizers else lambda cls: not cls.regularizer)


def build(name: str, settings: Mapping[str, object] | None = None, **options: object
          ) -> ContrastiveLoss:
    """An instance of the loss ``name``.

    ``settings`` maps hyperparameter names to values; the loss receives those it declares in
    ``hyperparameters`` (the rest are ignored, so one mapping can serve every loss) and keeps
    its own defaults for the others. ``options`` (``chunk_size``, ``distributed``, ...) are
    passed as they are.
    """
    cls = get(name)
    chosen = {key: value for key, value in (settings or {}).items()
              if key in cls.hyperparameters}
    return cls(**chosen, **options)


def _check_declared_hyperparameters(name: str, cls: type[ContrastiveLoss]) -> None:
    """Each declared hyperparameter must be a constructor argument (or go through ``**kwargs``)."""
    if cls.__init__ is nn.Module.__init__:  # no constructor of its own: takes no argument
        parameters: Mapping[str, inspect.Parameter] = {}
        takes_any = False
    else:
        parameters = inspect.signature(cls.__init__).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    missing = [h for h in cls.hyperparameters if h not in parameters and not takes_any]
    if missing:
        raise ValueError(f"loss {name!r} declares hyperparameters {missing} that its "
                         f"constructor does not take")
