""":func:`check_loss`: every property of :mod:`~contrastkit.testing.properties` on one loss,
one pass/fail line each, gathered in a :class:`LossCheck`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from contrastkit.checks.scalars import check_count, check_positive

from . import properties
from .processes import ProcessFailed
from .subject import Batch, subject_of

#: The default tolerance of the bfloat16 comparison, relative to the float64 magnitudes.
MIXED_PRECISION_TOLERANCE = 0.03


@dataclass(frozen=True)
class PropertyResult:
    """One property of one loss.

    Attributes:
        name: the property (``"2 processes"``, ``"gradcheck"``, ``"NaN input"``, ...).
        status: ``"pass"``, ``"fail"`` or ``"skip"`` (the loss does not declare what the
            property needs, e.g. ``chunk_size=``).
        detail: what was found, e.g. the largest difference and where, or the error raised.
        difference: the largest absolute difference, where the property compares numbers.
    """

    name: str
    status: str
    detail: str
    difference: float | None = None

    @property
    def passed(self) -> bool:
        """Not failed (a skipped property passes)."""
        return self.status != "fail"

    def line(self) -> str:
        """``PASS  name: detail`` (or ``FAIL``, ``SKIP``)."""
        return f"{self.status.upper():<4}  {self.name}: {self.detail}"


@dataclass(frozen=True)
class LossCheck:
    """The result of :func:`check_loss`: each property's :class:`PropertyResult`."""

    loss: str
    results: tuple[PropertyResult, ...]

    @property
    def passed(self) -> bool:
        """Whether no property failed."""
        return all(result.passed for result in self.results)

    @property
    def failed(self) -> tuple[PropertyResult, ...]:
        """The properties that failed."""
        return tuple(result for result in self.results if not result.passed)

    def summary(self) -> str:
        """One line: the loss, and the failed properties or that all passed."""
        if self.passed:
            return f"{self.loss}: every property holds"
        return (f"{self.loss}: {len(self.failed)} propert{'y' if len(self.failed) == 1 else 'ies'}"
                f" failed ({', '.join(result.name for result in self.failed)})")

    def __str__(self) -> str:
        return "\n".join([*(result.line() for result in self.results), self.summary()])


def check_loss(loss: object, settings: Mapping[str, object] | None = None, *,
               world_sizes: Iterable[int] = (2, 4), batch_size: int = 8, dim: int = 8,
               chunk_size: int = 3, mixed_precision_tolerance: float = MIXED_PRECISION_TOLERANCE,
               seed: int = 0, verbose: bool = True) -> LossCheck:
    """Check that ``loss`` computes the same thing in every way a training run may call it.

    ``loss`` is a registered name (``"simclr"``), a
    :class:`~contrastkit.losses.ContrastiveLoss` subclass, or a factory returning a loss for
    keyword arguments; ``settings`` are its constructor arguments (``{"n": 50}`` for VRNS). It
    must be deterministic. The properties, on a float64 batch of ``batch_size`` pairs of
    ``dim`` dimensions drawn from ``seed``:

    - ``W processes`` for each ``W`` of ``world_sizes``: ``W`` gloo processes on the CPU, each
      fed its rows, compute what one process computes on the whole batch, the mean of their
      values and every process's input gradients (``distributed=True`` where the loss declares
      ``supports_distributed``, else the loss of the gathered batch on every process; with and
      without ``chunk_size``);
    - ``gradcheck``: ``torch.autograd.gradcheck`` in float64 on 4 pairs of 3 dimensions;
    - ``chunked``: ``chunk_size=chunk_size`` against one block (where declared);
    - ``batch of one``: a ``ValueError`` or a finite value (the line says which);
    - ``NaN input``: raises a ``ValueError``;
    - ``mixed precision``: bfloat16 views within ``mixed_precision_tolerance`` (relative to the
      largest magnitude) of float64 on the same values, value and gradients.

    With ``verbose`` each property prints a ``PASS``/``FAIL``/``SKIP`` line with its largest
    difference as it completes, then a summary line. A loss that raises where a property
    expects a value fails that property (the line gives the error). Bad arguments raise
    ``ValueError``. The processes are forked on Linux and macOS without a CUDA device, so the
    loss may be defined anywhere; elsewhere (a CUDA device: a forked process cannot use
    autograd) they are spawned and it must be importable (:mod:`.processes`).
    """
    world_sizes = _check_world_sizes(world_sizes, batch_size)
    dim = check_count("dim", dim, 1)
    chunk_size = check_count("chunk_size", chunk_size, 1)
    tolerance = check_positive("mixed_precision_tolerance", mixed_precision_tolerance)
    subject = subject_of(loss, settings)
    batch = Batch.random(batch_size, dim, seed)
    small = Batch.random(4, 3, seed)
    checks: list[tuple[str, Callable[[], properties.Finding]]] = [
        (f"{size} processes", functools.partial(properties.processes, subject, batch, size,
                                                chunk_size)) for size in world_sizes]
    checks += [
        ("gradcheck", functools.partial(properties.gradcheck, subject, small)),
        (f"chunk_size={chunk_size}", functools.partial(properties.chunked, subject, batch,
                                                      chunk_size)),
        ("batch of one", functools.partial(properties.batch_of_one, subject, batch)),
        ("NaN input", functools.partial(properties.nan_input, subject, batch)),
        ("mixed precision", functools.partial(properties.mixed_precision, subject, batch,
                                              tolerance)),
    ]
    results = []
    for name, examine in checks:
        results.append(PropertyResult(name, *_examined(examine)))
        if verbose:
            print(results[-1].line(), flush=True)
    check = LossCheck(subject.description, tuple(results))
    if verbose:
        print(check.summary(), flush=True)
    return check


def _examined(examine: Callable[[], properties.Finding]) -> properties.Finding:
    """The finding of a property; an error the loss raised where a value was expected fails
    it (named in the detail)."""
    try:
        return examine()
    except ProcessFailed as error:
        return properties.Finding("fail", str(error))
    except Exception as error:  # the loss's error is the finding, not the checker's
        return properties.Finding("fail", f"raises {type(error).__name__}: {error}")


def _check_world_sizes(world_sizes: Iterable[int], batch_size: int) -> tuple[int, ...]:
    """The world sizes as a tuple; each at least 2 and leaving at least 2 rows per process."""
    batch_size = check_count("batch_size", batch_size, 4)
    if not isinstance(world_sizes, Iterable):
        raise ValueError(f"world_sizes must be a sequence of process counts such as (2, 4), "
                         f"got {world_sizes!r}")
    sizes = tuple(check_count("world_sizes", size, 2) for size in world_sizes)
    uneven = [size for size in sizes if batch_size % size or batch_size // size < 2]
    if uneven:
        raise ValueError(f"batch_size={batch_size} must split into at least 2 rows per process "
                         f"for every one of world_sizes; it does not for {uneven}")
    return sizes
