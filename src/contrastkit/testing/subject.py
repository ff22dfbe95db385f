"""The loss a check examines: how to build it with the options a check needs (``distributed=``,
``chunk_size=``) and what it declares, from a registered name, a loss class or a factory; and
the batch it is fed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from contrastkit.losses.base import ContrastiveLoss


@dataclass(frozen=True)
class Subject:
    """A loss under test.

    Attributes:
        description: how the report names it (``simclr``, ``mypkg.losses.Mine``).
        factory, settings: ``factory(**settings)`` makes the loss (see :meth:`build`).
        uses_labels, supports_distributed, supports_chunking: what the loss declares (the
            attributes of :class:`~contrastkit.losses.ContrastiveLoss`, ``False`` where absent).
    """

    description: str
    factory: Callable[..., Callable]
    settings: Mapping[str, object]
    uses_labels: bool = False
    supports_distributed: bool = False
    supports_chunking: bool = False

    def build(self, **options) -> Callable:
        """The loss, a callable ``loss(u, v, labels)``; ``options`` holds ``distributed=True``
        and ``chunk_size=`` where the loss declares them."""
        return self.factory(**self.settings, **options)

    def labels(self, labels: torch.Tensor) -> torch.Tensor | None:
        """``labels`` for a loss that uses them, else ``None``."""
        return labels if self.uses_labels else None


@dataclass(frozen=True)
class Batch:
    """Two views ``u, v`` of shape ``(rows, dim)`` and class labels (each class twice, its two
    rows in different halves of the batch, so their pairing crosses processes)."""

    u: torch.Tensor
    v: torch.Tensor
    labels: torch.Tensor

    @classmethod
    def random(cls, rows: int, dim: int, seed: int) -> Batch:
        """A float64 batch drawn from a generator seeded with ``seed``."""
        generator = torch.Generator().manual_seed(seed)
        u, v = torch.randn(2, rows, dim, generator=generator, dtype=torch.float64)
        return cls(u, v, torch.arange(rows) % max(rows // 2, 1))

    def rows(self, where: slice) -> Batch:
        """The rows ``where`` of the batch."""
        return Batch(self.u[where], self.v[where], self.labels[where])


def subject_of(loss: object, settings: Mapping[str, object] | None = None) -> Subject:
    """The :class:`Subject` of ``loss``: a registered name (``"simclr"``), a
    :class:`~contrastkit.losses.ContrastiveLoss` subclass, or a factory returning a loss
    (a callable ``loss(u, v, labels)``, ideally a ``ContrastiveLoss``) for keyword arguments.

    A name or a class is built with ``settings`` and the options its class declares in
    ``training_options``; a factory is called with ``settings``. Either then receives
    ``distributed=True`` when the loss declares ``supports_distributed`` and ``chunk_size=``
    when it declares ``supports_chunking``. Raises ``ValueError`` when ``loss`` is none of
    these or cannot be built.
    """
    from contrastkit import losses

    settings = dict(settings or {})
    if isinstance(loss, str):
        description, loss = loss, losses.get(loss)
    elif isinstance(loss, ContrastiveLoss):
        raise ValueError(f"loss must be a loss class, a registered name or a factory (the check "
                         f"builds it with distributed=True and chunk_size=), got the instance "
                         f"{loss!r}: pass its class with settings=")
    elif callable(loss):
        description = f"{getattr(loss, '__module__', '?')}.{getattr(loss, '__qualname__', loss)}"
    else:
        raise ValueError(f"loss must be a registered name, a loss class or a factory, got "
                         f"{loss!r}")
    if isinstance(loss, type) and issubclass(loss, ContrastiveLoss):
        settings = {**loss.training_options, **settings}
    subject = Subject(description, loss, settings)
    try:
        probe = subject.build()
    except TypeError as error:
        raise ValueError(f"could not build the loss {description} with settings {settings}: "
                         f"{error} (a loss class or a factory is called with the settings as "
                         f"keyword arguments and must return a loss)") from error
    if not callable(probe):
        raise ValueError(f"loss {description} built {probe!r}, which is not a callable "
                         f"loss(u, v, labels)")
    return Subject(description, loss, settings, bool(getattr(probe, "uses_labels", False)),
                   bool(getattr(probe, "supports_distributed", False)),
                   bool(getattr(probe, "supports_chunking", False)))
