"""The properties :func:`~contrastkit.testing.check_loss` examines, one function each. Each
returns a :class:`Finding`: whether the loss has the property, in words, and the largest
difference found where the property compares numbers."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
import torch.distributed as dist
from torch.autograd.gradcheck import GradcheckError

from contrastkit import distributed

from .processes import run_processes
from .subject import Batch, Subject

#: Relative tolerance of the float64 comparisons (processes, chunks).
FLOAT64_TOLERANCE = 1e-9
#: gradcheck's finite-difference step and tolerances (float64).
GRADCHECK: dict[str, Any] = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}


class Finding(NamedTuple):
    """``status`` is ``"pass"``, ``"fail"`` or ``"skip"`` (the loss does not declare what the
    property needs); ``difference`` the largest absolute difference of the comparison that
    came closest to (or went furthest past) what it allows."""

    status: str
    detail: str
    difference: float | None = None


@dataclass(frozen=True)
class Comparison:
    """A computed tensor against its reference: the largest absolute difference and the
    largest allowed (``rtol`` times the reference's largest magnitude, plus ``atol``)."""

    what: str
    difference: float
    allowed: float

    @classmethod
    def of(cls, what: str, got: torch.Tensor, expected: torch.Tensor, rtol: float,
           atol: float = 1e-12) -> Comparison:
        got, expected = got.detach().double(), expected.detach().double()
        difference = float((got - expected).abs().max())
        allowed = rtol * float(expected.abs().max()) + atol
        return cls(what, math.inf if math.isnan(difference) else difference, allowed)


def judge(comparisons: list[Comparison]) -> Finding:
    """Pass when every comparison is within what it allows; name the worst one."""
    worst = max(comparisons, key=lambda c: c.difference / c.allowed)
    passed = all(c.difference <= c.allowed for c in comparisons)
    return Finding("pass" if passed else "fail",
                   f"largest difference {worst.difference:.3g} in {worst.what} "
                   f"(allowed {worst.allowed:.3g})", worst.difference)


def value_and_gradients(loss: Callable, batch: Batch, uses_labels: bool,
                        through: Callable[[torch.Tensor], torch.Tensor] = lambda x: x
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``loss(through(u), through(v), labels)`` (labels where ``uses_labels``) and its
    gradients with respect to ``u, v`` (zeros for a view it does not depend on)."""
    u, v = (x.detach().clone().requires_grad_() for x in (batch.u, batch.v))
    value = loss(through(u), through(v), through(batch.labels) if uses_labels else None)
    value.backward()
    return value.detach(), *(torch.zeros_like(x) if x.grad is None else x.grad for x in (u, v))


def _chunkings(subject: Subject, chunk_size: int) -> list[dict]:
    """The options of each way the loss is computed: unchunked, and chunked where it can be."""
    return [{}, {"chunk_size": chunk_size}] if subject.supports_chunking else [{}]


def processes(subject: Subject, batch: Batch, world_size: int, chunk_size: int) -> Finding:
    """``world_size`` gloo processes, each fed its rows of ``batch``, against one process on
    the whole batch: the mean of the processes' values is the loss, and each process's input
    gradient is ``world_size`` times the whole batch's gradient of its rows (the gather's
    backward sums every process's gradient into the rows that produced it; DDP then averages
    the parameters' gradients over the processes). A loss declaring ``supports_distributed``
    computes its share with ``distributed=True``; any other is computed on the gathered batch by
    every process, as the trainer does."""
    chunkings = _chunkings(subject, chunk_size)
    shares: list[Any] = run_processes(world_size,
                                      functools.partial(_share, subject, batch, chunkings))
    rows = len(batch.u) // world_size
    comparisons = []
    for index, options in enumerate(chunkings):
        how = f", chunk_size={chunk_size}" if options else ""
        value, grad_u, grad_v = value_and_gradients(subject.build(**options), batch,
                                                    subject.uses_labels)
        mean = torch.tensor([share[index][0] for share in shares], dtype=torch.float64).mean()
        comparisons.append(Comparison.of(f"the mean of the values{how}", mean, value,
                                         FLOAT64_TOLERANCE))
        for rank, share in enumerate(shares):
            mine = slice(rank * rows, (rank + 1) * rows)
            for view, grad, got in (("u", grad_u, share[index][1]), ("v", grad_v, share[index][2])):
                comparisons.append(Comparison.of(
                    f"the gradient of {view} on process {rank}{how}",
                    torch.tensor(got, dtype=torch.float64) / world_size, grad[mine],
                    FLOAT64_TOLERANCE))
    return judge(comparisons)


def _share(subject: Subject, batch: Batch, chunkings: list[dict]) -> list[tuple]:
    """In a process of the group: its value and input gradients for each chunking (plain
    numbers, for the parent)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    rows = len(batch.u) // world_size
    mine = batch.rows(slice(rank * rows, (rank + 1) * rows))
    results = []
    for options in chunkings:
        if subject.supports_distributed:
            found = value_and_gradients(subject.build(distributed=True, **options), mine,
                                        subject.uses_labels)
        else:
            found = value_and_gradients(subject.build(**options), mine, subject.uses_labels,
                                        through=distributed.gather)
        value, grad_u, grad_v = found
        results.append((float(value), grad_u.tolist(), grad_v.tolist()))
    return results


def gradcheck(subject: Subject, batch: Batch) -> Finding:
    """``torch.autograd.gradcheck`` in float64 on ``batch``; the detail reports the largest
    difference between the analytical gradient and central finite differences."""
    loss, labels = subject.build(), subject.labels(batch.labels)
    u, v = (x.detach().clone().requires_grad_() for x in (batch.u, batch.v))
    try:
        torch.autograd.gradcheck(lambda a, b: loss(a, b, labels), (u, v), **GRADCHECK)
        refused = None
    except GradcheckError as error:
        refused = str(error).strip().splitlines()[0].rstrip(",")
    _, grad_u, grad_v = value_and_gradients(loss, batch, subject.uses_labels)
    numerical = _central_differences(lambda a, b: loss(a, b, labels), batch.u, batch.v)
    finding = judge([Comparison.of(f"the gradient of {view}", analytic, approximate,
                                   GRADCHECK["rtol"], GRADCHECK["atol"])
                     for view, analytic, approximate in zip("uv", (grad_u, grad_v), numerical,
                                                            strict=True)])
    if refused is None:
        return finding
    return Finding("fail", f"{refused}; {finding.detail}", finding.difference)


def _central_differences(f: Callable, *inputs: torch.Tensor) -> list[torch.Tensor]:
    """The gradient of the scalar ``f(*inputs)`` by central differences, entry by entry."""
    copies = [x.detach().clone() for x in inputs]
    gradients = []
    step = GRADCHECK["eps"]
    with torch.no_grad():
        for x in copies:
            flat, gradient = x.view(-1), torch.zeros(x.numel(), dtype=x.dtype)
            for i in range(flat.numel()):
                kept = float(flat[i])
                flat[i] = kept + step
                above = float(f(*copies))
                flat[i] = kept - step
                below = float(f(*copies))
                flat[i] = kept
                gradient[i] = (above - below) / (2 * step)
            gradients.append(gradient.view_as(x))
    return gradients


def chunked(subject: Subject, batch: Batch, chunk_size: int) -> Finding:
    """``chunk_size=`` against one block: the same value and input gradients (float64)."""
    if not subject.supports_chunking:
        return Finding("skip", "the loss does not declare supports_chunking")
    whole, chunks = (value_and_gradients(subject.build(**options), batch, subject.uses_labels)
                     for options in _chunkings(subject, chunk_size))
    return judge([Comparison.of(what, got, expected, FLOAT64_TOLERANCE)
                  for what, got, expected in zip(("the value", "the gradient of u",
                                                  "the gradient of v"), chunks, whole,
                                                 strict=True)])


def batch_of_one(subject: Subject, batch: Batch) -> Finding:
    """One pair: a ``ValueError`` or a finite value pass (which one is reported); anything
    else, a non-finite value or another exception, fails."""
    return _one_call(subject, batch.rows(slice(0, 1)), finite_passes=True)


def nan_input(subject: Subject, batch: Batch) -> Finding:
    """A NaN in ``u`` must raise a ``ValueError``, not return a value (NaN or not)."""
    u = batch.u.clone()
    u[len(u) // 2, 0] = math.nan
    return _one_call(subject, Batch(u, batch.v, batch.labels), finite_passes=False)


def _one_call(subject: Subject, batch: Batch, finite_passes: bool) -> Finding:
    try:
        value = subject.build()(batch.u, batch.v, subject.labels(batch.labels))
    except ValueError as error:
        return Finding("pass", f"raises ValueError: {error}")
    except Exception as error:  # the property's finding, not the checker's failure
        return Finding("fail", f"raises {type(error).__name__} (expected a ValueError): "
                               f"{error}")
    value = float(value.detach().reshape(()))
    if finite_passes and math.isfinite(value):
        return Finding("pass", f"returns the finite value {value:.6g}")
    return Finding("fail", f"returns {value} without an error")


def mixed_precision(subject: Subject, batch: Batch, tolerance: float) -> Finding:
    """bfloat16 views (on the CPU) against float64 on the same (rounded) values: the value and
    input gradients within ``tolerance`` times the float64 ones' largest magnitude."""
    low = Batch(batch.u.to(torch.bfloat16), batch.v.to(torch.bfloat16), batch.labels)
    high = Batch(low.u.double(), low.v.double(), batch.labels)
    loss = subject.build()
    found = value_and_gradients(loss, low, subject.uses_labels)
    expected = value_and_gradients(loss, high, subject.uses_labels)
    return judge([Comparison.of(what, got, want, tolerance)
                  for what, got, want in zip(("the value", "the gradient of u",
                                              "the gradient of v"), found, expected,
                                             strict=True)])
