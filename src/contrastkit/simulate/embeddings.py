"""Free embeddings on the unit sphere, optimized directly on a contrastive loss.

There is no encoder: the ``2n`` embeddings ``u_i, v_i`` are the parameters. This is the setting
of the papers' optimality theorems (central paper Thm 5.1-5.5; sigmoid paper Fig. 2), so the
simulator checks them numerically: after optimization the similarity statistics should match
``contrastkit.theory``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from contrastkit.checks.scalars import check_count, check_positive
from contrastkit.geometry import SimilarityStats, similarity_stats
from contrastkit.losses import ContrastiveLoss
from contrastkit.rows import unit_rows

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
BATCHINGS = ("full", "fixed", "random")
OPTIMIZERS = ("adam", "sgd")
SCHEDULES = ("cosine", "constant")


@dataclass
class SimulationResult:
    """The outcome of :func:`optimize_embeddings`.

    Attributes:
        u, v: final embeddings, shape ``(n, d)``, unit rows (row ``i`` of each is pair ``i``).
        history: one dict per recorded step: ``step``, ``loss`` (the objective at that step's
            batches), each part of a composite loss under its name, and every field of
            :class:`~contrastkit.geometry.SimilarityStats` over all ``n`` pairs.
    """

    u: torch.Tensor
    v: torch.Tensor
    history: list[dict[str, float | None]] = field(default_factory=list)

    @property
    def stats(self) -> SimilarityStats:
        """Similarity statistics of the final embeddings."""
        return similarity_stats(self.u, self.v)


def optimize_embeddings(
    loss: Loss,
    n: int,
    d: int,
    *,
    batching: str = "full",
    batch_size: int | None = None,
    steps: int = 1000,
    lr: float = 0.05,
    optimizer: str = "adam",
    schedule: str = "cosine",
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    record_every: int | None = None,
    observe: Callable[[torch.Tensor, torch.Tensor], dict[str, float]] | None = None,
) -> SimulationResult:
    """Minimize ``loss`` over ``n`` pairs of free unit embeddings in ``R^d``.

    Embeddings start as Gaussian vectors projected onto the sphere and are projected back after
    every update (projected gradient descent; the library's losses normalize their inputs, so
    the gradient is already tangent to the sphere).

    Args:
        loss: any loss of :mod:`contrastkit.losses`, as a function (``losses.simclr``, or a
            ``functools.partial`` / lambda fixing its hyperparameters) or a module, including
            compositions such as ``losses.SimCLR(0.2) + 30 * losses.VRNS(n=n)``. It is called
            as ``loss(u_batch, v_batch)``.
        n, d: number of positive pairs (at least 2) and embedding dimension (at least 2: on
            the sphere of ``R^1`` nothing can move).
        batching: how each step's objective is formed, always over a partition of the pairs
            into batches, averaging the loss over the batches:

            - ``"full"``: one batch of all ``n`` pairs (Theorem 5.1);
            - ``"fixed"``: the contiguous batches ``{0..m-1}, {m..2m-1}, ...`` with
              ``m = batch_size``, which must divide ``n`` (Theorem 5.5);
            - ``"random"``: a fresh random partition every step (SGD-style reshuffling); when
              ``batch_size`` does not divide ``n`` the ``n % batch_size`` left-over pairs sit
              out that step.
        batch_size: the mini-batch size ``m`` (required for ``"fixed"`` and ``"random"``).
        steps: number of updates.
        lr: the learning rate (its peak, under ``schedule="cosine"``).
        optimizer: ``"adam"`` (fast and tight) or ``"sgd"`` (plain projected gradient descent,
            the sigmoid paper's protocol with ``lr = 0.5``).
        schedule: ``"cosine"`` decays the learning rate to 0 over ``steps`` (converges to
            1e-6-level precision in a few hundred steps); ``"constant"`` keeps it fixed.
        seed: seeds the initialization and the random batches.
        dtype: ``torch.float64`` (default) for tight comparisons with theory, or float32.
        record_every: record the history every this many steps (default: about 50 records).
        observe: a function of the current embeddings ``(u, v)`` (detached) returning more
            statistics to record: its values join every history entry (a curve of a
            statistic the caller needs, such as :mod:`contrastkit.experiments.kinds.lmcl_free`'s
            distance cover, which the convergence rule then judges).

    Returns:
        a :class:`SimulationResult`.

    Example:
        >>> from contrastkit import losses
        >>> result = optimize_embeddings(losses.simclr, n=4, d=3, steps=300, lr=0.1)
        >>> round(result.stats.positive_mean, 4), round(result.stats.negative_mean, 4)
        (1.0, -0.3333)
    """
    _check_loss(loss)
    n = check_count("n", n, minimum=2)
    d = check_dimension(d)
    steps = check_count("steps", steps, minimum=0)
    lr = check_positive("lr", lr)
    batch_size = _check_batching(batching, batch_size, n)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if record_every is None:
        record_every = max(1, steps // 50)
    record_every = check_count("record_every", record_every, minimum=1)
    check_memory(n, d, batch_size, dtype)

    generator = torch.Generator().manual_seed(int(seed))
    u = _random_sphere(n, d, dtype, generator).requires_grad_()
    v = _random_sphere(n, d, dtype, generator).requires_grad_()
    params = [u, v]
    # fused: one kernel for the whole update instead of a dozen passes over the parameters
    opt = (torch.optim.Adam(params, lr=lr, fused=True) if optimizer == "adam"
           else torch.optim.SGD(params, lr=lr))
    scheduler = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
        if schedule == "cosine"
        else None
    )
    history: list[dict[str, float | None]] = []
    for step in range(steps + 1):
        batches = _partition(batching, n, batch_size, generator)
        total, parts = _objective(loss, u, v, batches)
        if step % record_every == 0 or step == steps:
            history.append(_record(step, total, parts, u, v))
            if observe is not None:
                history[-1].update(observe(u.detach(), v.detach()))
        if step == steps:
            break
        opt.zero_grad(set_to_none=True)
        total.backward()
        opt.step()
        if scheduler is not None:
            scheduler.step()
        with torch.no_grad():
            for x in params:
                x.copy_(unit_rows(x))
    return SimulationResult(u=u.detach(), v=v.detach(), history=history)


def check_dimension(d: int, name: str = "d") -> int:
    """``d`` as an int if it is at least 2; a ``ValueError`` naming ``name`` otherwise. On the
    sphere of ``R^1``, the two points -1 and +1, an embedding cannot move: the gradient of a
    loss of normalized embeddings has no component along the sphere, so nothing would be
    optimized."""
    if not isinstance(d, bool) and d == 1:
        raise ValueError(f"{name} must be >= 2: the unit sphere of R^1 is the two points -1 "
                         f"and +1, where an embedding cannot move, so nothing would be "
                         f"optimized; got {name} 1")
    return check_count(name, d, minimum=2)


def memory_estimate(n: int, d: int, batch_size: int | None = None,
                    dtype: torch.dtype = torch.float64) -> int:
    """A lower bound, in bytes, of the memory one step of :func:`optimize_embeddings` needs:
    the loss of a batch of ``batch_size`` pairs (default ``n``, the full batch) holds at least
    two ``batch_size x batch_size`` similarity matrices (the logits and their gradient; the
    built-in losses hold 2.3 (spectral) to 23 (hcl) of them), and the ``2n`` embeddings come
    with their gradients and Adam's two moments."""
    batch = n if batch_size is None else batch_size
    size = torch.empty((), dtype=dtype).element_size()
    return (2 * batch * batch + 8 * n * d) * size


def available_memory() -> int | None:
    """The memory available to this process in bytes (Linux: ``MemAvailable``; elsewhere the
    physical memory), or ``None`` when it cannot be known."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def check_memory(n: int, d: int, batch_size: int | None = None,
                 dtype: torch.dtype = torch.float64) -> None:
    """A ``ValueError`` naming ``n`` and the estimate (:func:`memory_estimate`) when the
    simulation cannot fit in the available memory (:func:`available_memory`; nothing is
    refused when that is unknown), before anything is allocated."""
    needed = memory_estimate(n, d, batch_size, dtype)
    available = available_memory()
    if available is None or needed <= available:
        return
    batch = n if batch_size is None else batch_size
    name = str(dtype).removeprefix("torch.")
    raise ValueError(
        f"n={n} pairs need at least {_gigabytes(needed)} of memory (two {batch} x {batch} "
        f"{name} similarity matrices per step), more than the {_gigabytes(available)} "
        f"available; choose a smaller n (the memory grows with the square of the batch)")


def _gigabytes(count: int) -> str:
    gigabytes = count / 1e9
    return f"{gigabytes:,.0f} GB" if gigabytes >= 100 else f"{gigabytes:.3g} GB"


def _objective(
    loss: Loss, u: torch.Tensor, v: torch.Tensor, batches: list[torch.Tensor] | None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean of the loss (and of its parts) over the batches; ``None`` means one full batch."""
    if batches is None:
        return _evaluate(loss, u, v)
    total: torch.Tensor | None = None
    parts: dict[str, torch.Tensor] = {}
    for index in batches:
        value, value_parts = _evaluate(loss, u[index], v[index])
        total = value if total is None else total + value
        for name, part in value_parts.items():
            parts[name] = part if name not in parts else parts[name] + part
    count = len(batches)
    assert total is not None  # at least one batch: _check_batching
    return total / count, {name: part / count for name, part in parts.items()}


def _evaluate(loss: Loss, u: torch.Tensor, v: torch.Tensor
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    if isinstance(loss, ContrastiveLoss):
        output = loss.compute(u, v)
        parts = output.parts if len(output.parts) > 1 else {}
        return output.total, parts
    return loss(u, v), {}


def _record(step: int, total: torch.Tensor, parts: dict[str, torch.Tensor], u: torch.Tensor,
            v: torch.Tensor) -> dict[str, float | None]:
    entry: dict[str, float | None] = {"step": step, "loss": float(total.detach())}
    entry.update({name: float(part.detach()) for name, part in parts.items()})
    entry.update(similarity_stats(u.detach(), v.detach()).as_dict())
    return entry


def _partition(batching: str, n: int, batch_size: int, generator: torch.Generator
               ) -> list[torch.Tensor] | None:
    if batching == "full":
        return None
    if batching == "fixed":
        order = torch.arange(n)
    else:
        order = torch.randperm(n, generator=generator)
    usable = n - n % batch_size
    return list(order[:usable].split(batch_size))


def _random_sphere(n: int, d: int, dtype: torch.dtype, generator: torch.Generator
                   ) -> torch.Tensor:
    x = torch.randn(n, d, generator=generator, dtype=torch.float64).to(dtype)
    return unit_rows(x)


def _check_loss(loss: object) -> None:
    if not callable(loss):
        raise ValueError(f"loss must be a loss function or module, got {type(loss).__name__}")


def _check_batching(batching: str, batch_size: int | None, n: int) -> int:
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {BATCHINGS}, got {batching!r}")
    if batching == "full":
        if batch_size is not None and batch_size != n:
            raise ValueError(
                f"batch_size must be None (or n = {n}) with batching='full', got {batch_size!r}"
            )
        return n
    if batch_size is None:
        raise ValueError(f"batch_size is required with batching={batching!r}")
    return check_batch_size(batch_size, n, fixed=batching == "fixed")


def check_batch_size(batch_size: int, n: int, fixed: bool, name: str = "batch_size") -> int:
    """``batch_size`` as an int if it is a mini-batch size of ``n`` pairs: from 2 to ``n``, and
    with ``fixed`` batches a divisor of ``n``; a ``ValueError`` naming ``name`` otherwise."""
    batch_size = check_count(name, batch_size, minimum=2)
    if batch_size > n:
        raise ValueError(f"{name} must be <= n = {n}, got {batch_size}")
    if fixed and n % batch_size:
        raise ValueError(f"{name} must divide n = {n} for fixed mini-batches (equal batches, "
                         f"Theorem 5.5), got {batch_size}")
    return batch_size
