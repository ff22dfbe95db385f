"""Loss modules that compose: ``SimCLR(temperature=0.2) + 30 * VRNS(n=50_000)``.

Every loss module is a :class:`ContrastiveLoss`. Adding two of them, or multiplying one by a
number, gives a :class:`CompositeLoss` whose :meth:`~ContrastiveLoss.compute` returns the total
together with each part (unweighted) and its weight, ready for logging. Nothing is recorded on
the module behind the caller's back: the parts come back as a return value.

A loss module computes on a :class:`~contrastkit.losses.views.SharedViews` in
``forward_shared(shared, labels)``; its ``forward(u, v, labels)`` is "wrap the views, then
``forward_shared``", so there is one implementation. A composite wraps the views once and
passes the same :class:`~contrastkit.losses.views.SharedViews` to every term, which then share
the check of the views, their normalized rows, the gathered global batch and the similarity
products where their settings agree (see :mod:`contrastkit.losses.views`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType
from typing import cast

import torch
from torch import nn

from contrastkit.checks.scalars import check_real

from .views import SharedViews


@dataclass
class LossOutput:
    """The result of :meth:`ContrastiveLoss.compute`.

    Attributes:
        total: the scalar to backpropagate, ``sum(weights[k] * parts[k])``.
        parts: each term's unweighted value, keyed by the term's name.
        weights: each term's weight, keyed like ``parts``.
    """

    total: torch.Tensor
    parts: dict[str, torch.Tensor] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)

    def as_floats(self) -> dict[str, float]:
        """The total and the parts as plain floats (``{"loss": ..., "simclr": ..., ...}``),
        copied to the host together (one synchronization with a GPU, not one per value)."""
        names, values = self.stacked()
        return dict(zip(names, values.tolist(), strict=True))

    def stacked(self) -> tuple[list[str], torch.Tensor]:
        """The names of :meth:`as_floats` and their values, detached, in one float64 vector on
        the loss's device (for a caller that copies them to the host with other numbers)."""
        values = torch.stack([value.detach().reshape(()).to(torch.float64)
                              for value in (self.total, *self.parts.values())])
        return ["loss", *self.parts], values


class ContrastiveLoss(nn.Module):
    """Base class of the loss modules.

    Subclasses implement ``forward_shared(shared, labels=None)`` on a
    :class:`~contrastkit.losses.views.SharedViews` (the library's losses, which then share work
    inside a :class:`CompositeLoss`) or ``forward(u, v, labels=None)`` (a loss of one's own),
    returning a scalar tensor, and declare what they are (read by
    :mod:`contrastkit.losses.registry`, which also sets ``name``, the key under which the loss is
    logged, when the class is registered):

    - ``hyperparameters``: the constructor arguments a trainer or a command may set;
    - ``uses_labels``: ``True`` when ``forward`` needs class labels (the others ignore them);
    - ``supports_chunking``: the constructor takes ``chunk_size=``;
    - ``supports_distributed``: the constructor takes ``distributed=True`` (each process's share
      of the global-batch loss under torch.distributed);
    - ``supports_negatives``: ``forward`` and ``compute`` take explicit ``negatives=`` beside the
      in-batch ones (a pool ``(M, d)`` or each anchor's own ``(B, k, d)``; see
      :mod:`contrastkit.losses.explicit_negatives`); the others refuse them;
    - ``training_options``: constructor options a training run fixes.
    """

    name: str = "loss"
    uses_labels: bool = False
    hyperparameters: tuple[str, ...] = ()
    supports_chunking: bool = False
    supports_distributed: bool = False
    supports_negatives: bool = False
    training_options: Mapping[str, object] = MappingProxyType({})
    regularizer: bool = False

    def forward(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
                negatives: torch.Tensor | None = None) -> torch.Tensor:
        """``forward_shared`` on the views ``u, v`` and the explicit ``negatives`` (wrapped in a
        fresh :class:`~contrastkit.losses.views.SharedViews`; ``negatives`` only where the loss
        declares ``supports_negatives``)."""
        if type(self).forward_shared is ContrastiveLoss.forward_shared:
            raise NotImplementedError(
                f"{type(self).__name__} implements neither forward nor forward_shared")
        self._negatives_argument(negatives)
        return self.forward_shared(SharedViews(u, v, negatives), labels)

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        """The loss on views prepared once for every term of a composite (see
        :mod:`contrastkit.losses.views`). By default: ``self(shared.u, shared.v, labels)``, the
        loss's own ``forward`` on the views as given, sharing nothing."""
        return self(shared.u, shared.v, labels)

    def compute(
        self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
        negatives: torch.Tensor | None = None,
    ) -> LossOutput:
        """Evaluate the loss (with the explicit ``negatives``, where it declares
        ``supports_negatives``) and return it with its parts (a single part for a plain loss)."""
        value = self(u, v, labels, **self._negatives_argument(negatives))
        return LossOutput(total=value, parts={self.name: value}, weights={self.name: 1.0})

    def _negatives_argument(self, negatives: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """``{"negatives": negatives}`` to pass on, ``{}`` for ``None``; a ``ValueError`` when
        the loss does not declare ``supports_negatives``."""
        if negatives is None:
            return {}
        if not self.supports_negatives:
            raise ValueError(
                f"negatives: the loss {self.name!r} ({type(self).__name__}) takes no explicit "
                f"negatives (supports_negatives is False); info_nce, siglip and the "
                f"hard-negative losses (scl, hscl, ucl, hucl) do")
        return {"negatives": negatives}

    def terms(self) -> list[tuple[float, ContrastiveLoss]]:
        """The (weight, loss) terms this loss is the weighted sum of."""
        return [(1.0, self)]

    def settings(self) -> dict[str, object]:
        """The value of each declared hyperparameter, e.g. ``{"temperature": 0.2}``."""
        return {name: getattr(self, name) for name in self.hyperparameters}

    def __add__(self, other: ContrastiveLoss) -> CompositeLoss:
        if not isinstance(other, ContrastiveLoss):
            return NotImplemented
        return CompositeLoss(self.terms() + other.terms())

    def __mul__(self, weight: float) -> CompositeLoss:
        if isinstance(weight, bool) or not isinstance(weight, Real):
            return NotImplemented
        weight = check_real("weight", weight)
        return CompositeLoss([(weight * w, loss) for w, loss in self.terms()])

    __rmul__ = __mul__


class CompositeLoss(ContrastiveLoss):
    """A weighted sum of losses. Build it with ``+`` and ``*`` rather than directly.

    Parts are named after their losses; a name that repeats gets a suffix (``vrns``, ``vrns_2``).
    """

    name = "composite"

    def __init__(self, terms: list[tuple[float, ContrastiveLoss]]) -> None:
        super().__init__()
        if not terms:
            raise ValueError("terms must hold at least one (weight, loss) pair")
        self.weights = [float(w) for w, _ in terms]
        self.losses = nn.ModuleList(loss for _, loss in terms)
        self.part_names = _unique_names([loss.name for _, loss in terms])
        self.uses_labels = any(loss.uses_labels for _, loss in terms)
        self.supports_negatives = any(loss.supports_negatives for _, loss in terms)

    def terms(self) -> list[tuple[float, ContrastiveLoss]]:
        # nn.ModuleList types its items as plain modules; it holds the terms' losses
        return [(weight, cast(ContrastiveLoss, loss))
                for weight, loss in zip(self.weights, self.losses, strict=True)]

    def compute(
        self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
        negatives: torch.Tensor | None = None,
    ) -> LossOutput:
        """Evaluate every term on one :class:`~contrastkit.losses.views.SharedViews` of ``u, v``
        (the check, normalization, gather and similarity products done once where the terms'
        settings agree) and return the total with the parts. Explicit ``negatives`` go to the
        terms that declare ``supports_negatives``; the others compute on the views alone (at
        least one term must take them)."""
        self._negatives_argument(negatives)
        return self.compute_shared(SharedViews(u, v, negatives), labels)

    def compute_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> LossOutput:
        """:meth:`compute` on views already wrapped (e.g. by an enclosing composite)."""
        parts: dict[str, torch.Tensor] = {}
        weights: dict[str, float] = {}
        total: torch.Tensor | None = None
        for name, (weight, loss) in zip(self.part_names, self.terms(), strict=True):
            if _takes_shared_views(loss):
                value = loss.forward_shared(shared, labels)
            elif loss.supports_negatives and shared.negatives is not None:
                value = loss(shared.u, shared.v, labels, negatives=shared.negatives)
            else:
                value = loss(shared.u, shared.v, labels)
            parts[name] = value
            weights[name] = weight
            total = weight * value if total is None else total + weight * value
        assert total is not None  # __init__ refuses a composite without terms
        return LossOutput(total=total, parts=parts, weights=weights)

    def forward_shared(self, shared: SharedViews, labels: torch.Tensor | None = None
                       ) -> torch.Tensor:
        return self.compute_shared(shared, labels).total

    def extra_repr(self) -> str:
        pairs = zip(self.weights, self.part_names, strict=True)
        return " + ".join(f"{weight:g} * {name}" for weight, name in pairs)


def _takes_shared_views(loss: ContrastiveLoss) -> bool:
    """Whether a term is evaluated through ``forward_shared``: its ``forward`` is the base
    class's "wrap, then ``forward_shared``" (a subclass that overrides ``forward`` is called
    through it, on the views as given) and no forward hook is registered on it (calling
    ``forward_shared`` directly would skip the hook)."""
    return (type(loss).forward is ContrastiveLoss.forward
            and not (loss._forward_hooks or loss._forward_pre_hooks))


def _unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return unique
