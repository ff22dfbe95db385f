"""Exact large-batch gradients in small memory: gradient caching for any contrastive loss.

Gradient accumulation does not work for a contrastive loss: each micro-batch would see only its
own negatives. Gradient caching (Gao, Zhang, Han, Callan, "Scaling Deep Contrastive Learning
Batch Size under Memory Limited Setup", RepL4NLP 2021, arXiv:2101.06983) computes the gradient
of the loss of the *whole* batch in three steps:

1. embed every chunk of ``chunk_size`` rows without an autograd graph (the embeddings of the
   whole batch are small: ``B x d``);
2. compute the loss on those embeddings and its gradient with respect to them (and to the
   loss's own parameters, e.g. a learnable temperature);
3. embed each chunk again, now with a graph, and back-propagate the cached embedding gradient
   of its rows into the encoder; only one chunk's activations are alive at a time.

The encoder's ``.grad`` is then what ``criterion(encoder(view1), encoder(view2)).backward()``
leaves, up to rounding, for any loss: the chain rule splits exactly at the embeddings. Peak
memory is about one chunk's activations plus the loss's ``B x B`` similarity block; time is
about one extra forward pass.

Two things differ from one big forward, and both are handled here:

- **Randomness** inside the encoder (dropout): the random state is saved before each chunk's
  first pass and restored for its second, so both passes draw the same masks; afterwards the
  random state is where the first pass left it.
- **BatchNorm** normalizes each chunk by the chunk's statistics, not the batch's; this changes
  the gradient, as it does in any micro-batched forward (``docs/grad-cache.md`` measures by how
  much). ``batch_norm="chunk"`` (default) accepts it and updates the running statistics once
  per chunk, as one pass would; ``batch_norm="frozen"`` runs every BatchNorm on its running
  statistics in both passes (no update), so that the result is exactly that of a plain step of
  an encoder whose BatchNorm layers are in eval mode, whatever the chunk size.

Under DDP, pass the DDP-wrapped encoder and a criterion built with ``distributed=True``: the
loss gathers the embeddings of every process, each process re-runs only its own chunks, and the
gradient is synchronized once, on the last chunk's backward.

Explicit negatives (``negatives=``, for a criterion that declares ``supports_negatives``) are
inputs too: embedded chunk by chunk with the second view's tower, passed to the loss beside the
views, and replayed like them (:mod:`contrastkit.losses.explicit_negatives`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import cast

import torch
from torch import nn

from contrastkit import distributed
from contrastkit.checks.scalars import check_choice, check_count
from contrastkit.losses import ContrastiveLoss, LossOutput

from .precision import PRECISIONS, Precision

__all__ = ["grad_cache"]

BATCH_NORM_MODES = ("chunk", "frozen")
#: ``precision``'s choices: the trainer's, resolved (no ``auto``).
CACHED_PRECISIONS = tuple(name for name in PRECISIONS if name != "auto")


def grad_cache(encoder: nn.Module, criterion: ContrastiveLoss, view1: torch.Tensor,
               view2: torch.Tensor, chunk_size: int, labels: torch.Tensor | None = None, *,
               batch_norm: str = "chunk", precision: str = "fp32",
               scaler: torch.amp.GradScaler | None = None, return_embeddings: bool = False,
               towers: tuple[str, str] | None = None, negatives: torch.Tensor | None = None
               ) -> LossOutput | tuple[LossOutput, tuple[torch.Tensor, torch.Tensor]]:
    """Back-propagate ``criterion(encoder(view1), encoder(view2), labels)`` into ``encoder``
    (and into ``criterion``'s parameters) chunk by chunk, with the memory of one chunk; with
    ``negatives``, ``criterion(..., negatives=encoder(negatives))``.

    Args:
        encoder: maps a batch of inputs to ``(rows, d)`` embeddings (a DDP module under DDP).
        criterion: any contrastkit loss; ``compute`` is called once, on the whole batch.
        view1, view2: the two views, ``(B, ...)`` each, row ``i`` of each the positive pair.
        chunk_size: rows per forward pass; the last chunk may be smaller.
        labels: class labels ``(B,)`` for the losses that use them.
        batch_norm: ``"chunk"`` or ``"frozen"``; see the module docstring.
        precision: ``"fp32"`` (default), ``"bf16"`` or ``"fp16"``: run the encoder under
            ``torch.autocast`` of the inputs' device with that dtype (the trainer's
            ``precision``, :mod:`~contrastkit.train.precision`); the cached embeddings are cast
            back to the inputs' floating dtype and the loss runs on them outside autocast, so
            the loss and its gradient are those of the float32 embeddings.
        scaler: a ``GradScaler``: the loss is scaled before its backward (the cached gradients
            are then scaled too, and the encoder's gradients come out scaled, as ``scaler``
            expects).

        return_embeddings: also return the two views' embeddings (detached), e.g. for a
            :class:`~contrastkit.monitor.SimilarityMonitor`.
        towers: for a two-tower model (:class:`~contrastkit.models.TwoTower`), the tower
            that embeds each view, called as ``encoder(chunk, tower=towers[i])`` (e.g.
            ``("image", "text")``: view2 then holds token ids); ``None`` (default) calls
            ``encoder(chunk)`` for both.
        negatives: inputs of explicit negatives, embedded like ``view2`` (by its tower): a
            pool ``(M, ...)`` with ``view2``'s number of dimensions, or each row's own
            ``(B, k, ...)`` with one more; the loss receives ``(M, d)`` or ``(B, k, d)``
            embeddings.

    Returns:
        what ``criterion.compute`` returns, detached; with ``return_embeddings``, the pair
        ``(output, (u, v))``.

    Gradients accumulate into ``.grad`` as ``backward()`` does: zero them before, step after.

    Raises:
        ValueError: the encoder's output shape is not the same for every chunk (of either
            view), or not the same in the first pass and the recompute pass; the message names
            the chunk and both shapes. Grad caching needs an encoder deterministic in shape
            (a recompute that fails leaves the gradients of the chunks before it in ``.grad``).
    """
    check_count("chunk_size", chunk_size, 1)
    check_choice("batch_norm", batch_norm, BATCH_NORM_MODES)
    check_choice("precision", precision, CACHED_PRECISIONS)
    autocast = Precision(precision, view1.device.type).autocast
    _check_views(view1, view2, labels, negatives)
    views = (view1, view2) if negatives is None else (view1, view2, _rows(negatives, view2))
    with _frozen_batch_norm(encoder, batch_norm == "frozen"):
        rng_states, cached = [], []
        with torch.no_grad():
            first: tuple[str, tuple[int, ...]] | None = None
            for view_index, view in enumerate(views):
                rows = []
                for index, chunk in enumerate(view.split(chunk_size)):
                    rng_states.append(_rng_state(chunk.device))
                    rows.append(_embed(encoder, chunk, autocast, view.dtype,
                                       _tower(towers, view_index)))
                    where = _chunk_name(view_index, index, chunk_size, chunk.shape[0])
                    if first is None:
                        first = where, tuple(rows[-1].shape)
                    elif rows[-1].shape[1] != first[1][1]:
                        raise ValueError(
                            f"grad_cache: the encoder gave {where} embeddings of shape "
                            f"{tuple(rows[-1].shape)}, but {first[0]} of shape {first[1]}: "
                            "grad caching needs the same embedding dimension for every "
                            "chunk (the encoder's output shape must not depend on the chunk)")
                cached.append(torch.cat(rows).requires_grad_())
        if negatives is None:
            output = criterion.compute(cached[0], cached[1], labels)
        else:  # (M, d), or (B, k, d) for each row's own
            shape = negatives.shape[: negatives.dim() - view2.dim() + 1]
            output = criterion.compute(cached[0], cached[1], labels,
                                       negatives=cached[2].view(*shape, -1))
        total = output.total if scaler is None else scaler.scale(output.total)
        total.backward()
        grads = cast(list[torch.Tensor], [z.grad for z in cached])  # set by the backward
        _replay(encoder, views, chunk_size, grads, rng_states, autocast,
                batch_norm == "chunk", towers)
    output = LossOutput(output.total.detach(),
                        {name: value.detach() for name, value in output.parts.items()},
                        dict(output.weights))
    if return_embeddings:
        return output, (cached[0].detach(), cached[1].detach())
    return output


class GatheredLoss(ContrastiveLoss):
    """``criterion`` on the embeddings (and labels) of every process, gathered with their
    gradients (:func:`contrastkit.distributed.gather`): under DDP, the form of a loss that has
    no per-process share (``supports_distributed``) for :func:`grad_cache`. Each process then
    computes the loss of the global batch, and the gather's backward sums the processes'
    gradients into the rows each one embedded, as the plain training step does."""

    def __init__(self, criterion: ContrastiveLoss) -> None:
        super().__init__()
        self.criterion = criterion
        self.uses_labels = criterion.uses_labels
        self.supports_negatives = criterion.supports_negatives

    def forward(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
                negatives: torch.Tensor | None = None) -> torch.Tensor:
        return self.compute(u, v, labels, negatives).total

    def compute(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor | None = None,
                negatives: torch.Tensor | None = None) -> LossOutput:
        """Explicit ``negatives`` are gathered too: each row's own ``(B, k, d)`` with their rows,
        a pool ``(M, d)`` concatenated (every process must hold as many)."""
        labels = None if labels is None else distributed.gather(labels)
        options = self._negatives_argument(negatives)  # refused where the criterion takes none
        if negatives is not None:
            options["negatives"] = gathered_negatives(negatives)
        return self.criterion.compute(distributed.gather(u), distributed.gather(v), labels,
                                      **options)


def gathered_negatives(negatives: torch.Tensor) -> torch.Tensor:
    """Explicit negatives gathered over processes, with their gradients: each row's own
    ``(B, k, d)`` with their rows, a pool ``(M, d)`` concatenated (every process must hold as
    many)."""
    if negatives.dim() == 2:
        return distributed.gather_pool(negatives)
    return distributed.gather(negatives)


def _replay(encoder: nn.Module, views: tuple[torch.Tensor, ...], chunk_size: int,
            gradients: list[torch.Tensor], rng_states: list,
            autocast: Callable[[], contextlib.AbstractContextManager],
            restore_statistics: bool, towers: tuple[str, str] | None = None) -> None:
    """Re-run every chunk with a graph under the random state of its first pass and
    back-propagate its rows of the cached ``gradients``; gradients synchronize (DDP) only at
    the last chunk. The random state, and with ``restore_statistics`` the BatchNorm running
    statistics (already updated by the first pass), end as the first pass left them."""
    jobs = [(chunk, grad, _chunk_name(view_index, index, chunk_size, chunk.shape[0]),
             _tower(towers, view_index))
            for view_index, (view, gradient) in enumerate(zip(views, gradients, strict=True))
            for index, (chunk, grad) in enumerate(zip(view.split(chunk_size),
                                                      gradient.split(chunk_size), strict=True))]
    statistics = _running_statistics(encoder) if restore_statistics else {}
    devices = sorted({chunk.device.index for chunk, *_ in jobs
                      if chunk.device.type == "cuda"})
    with torch.random.fork_rng(devices=devices):
        for index, ((chunk, grad, where, tower), state) in enumerate(zip(jobs, rng_states,
                                                                         strict=True)):
            _set_rng_state(state)
            last = index == len(jobs) - 1
            with contextlib.nullcontext() if last else _no_sync(encoder):
                rows = _embed(encoder, chunk, autocast, grad.dtype, tower)
                if rows.shape != grad.shape:
                    raise ValueError(
                        f"grad_cache: the encoder gave {where} embeddings of shape "
                        f"{tuple(rows.shape)} in the recompute pass (with autograd), but "
                        f"{tuple(grad.shape)} in the first pass (without): grad caching "
                        "embeds every chunk twice and needs the same output shape both times "
                        "(the encoder must be deterministic in shape)")
                rows.backward(grad)
    with torch.no_grad():
        for buffer, saved in statistics.items():
            buffer.copy_(saved)


def _tower(towers: tuple[str, str] | None, view_index: int) -> str | None:
    """The tower that embeds view ``view_index`` (2: the negatives, embedded like view 1;
    ``None``: the encoder takes every view)."""
    return None if towers is None else towers[min(view_index, 1)]


def _rows(negatives: torch.Tensor, view2: torch.Tensor) -> torch.Tensor:
    """The inputs of the explicit negatives one per row, as the encoder takes them: a pool as it
    is, each row's own ``(B, k, ...)`` flattened to ``(B k, ...)``."""
    return negatives if negatives.dim() == view2.dim() else negatives.flatten(0, 1)


def _embed(encoder: nn.Module, chunk: torch.Tensor,
           autocast: Callable[[], contextlib.AbstractContextManager], dtype: torch.dtype,
           tower: str | None = None) -> torch.Tensor:
    """The chunk's embeddings in ``dtype``, or for a chunk of token ids (an integer ``dtype``)
    in the default floating dtype."""
    with autocast():
        rows = encoder(chunk) if tower is None else encoder(chunk, tower=tower)
    if rows.ndim != 2 or rows.shape[0] != chunk.shape[0]:
        raise ValueError(f"encoder must map a chunk of {chunk.shape[0]} rows to a "
                         f"({chunk.shape[0]}, d) tensor, got shape {tuple(rows.shape)}")
    return rows.to(dtype if dtype.is_floating_point else torch.get_default_dtype())


def _chunk_name(view_index: int, index: int, chunk_size: int, rows: int) -> str:
    """``chunk 2 of view1 (rows 10-14)``: the chunk's place, for an error message (view 2 is
    the negatives, their rows counted one per negative)."""
    start = index * chunk_size
    where = "negatives" if view_index == 2 else f"view{view_index + 1}"
    return f"chunk {index} of {where} (rows {start}-{start + rows - 1})"


def _check_views(view1: torch.Tensor, view2: torch.Tensor, labels: torch.Tensor | None,
                 negatives: torch.Tensor | None = None) -> None:
    for name, view in (("view1", view1), ("view2", view2)):
        if not isinstance(view, torch.Tensor) or view.ndim < 1 or view.shape[0] < 1:
            raise ValueError(f"{name} must be a tensor of at least one row, got "
                             f"{getattr(view, 'shape', type(view).__name__)}")
    if view1.shape[0] != view2.shape[0]:
        raise ValueError(f"view1 and view2 must hold the same number of rows, got "
                         f"{view1.shape[0]} and {view2.shape[0]}")
    if labels is not None and labels.shape[:1] != view1.shape[:1]:
        raise ValueError(f"labels must have one entry per row ({view1.shape[0]}), got shape "
                         f"{tuple(labels.shape)}")
    if negatives is None:
        return
    if not isinstance(negatives, torch.Tensor):
        raise ValueError(f"negatives must be a tensor of inputs like view2's or None, got "
                         f"{type(negatives).__name__}")
    extra = negatives.dim() - view2.dim()  # 0: a pool (M, ...); 1: each row's own (B, k, ...)
    leading = negatives.shape[: extra + 1]
    if extra not in (0, 1) or min(leading) < 1 or (extra and leading[0] != view2.shape[0]):
        raise ValueError(
            f"negatives must be inputs like view2's: a pool (M, ...) of {view2.dim()} "
            f"dimensions with M >= 1, or ({view2.shape[0]}, k, ...) of {view2.dim() + 1} "
            f"(k >= 1 of each row's own), got shape {tuple(negatives.shape)}")


def _rng_state(device: torch.device
               ) -> tuple[torch.Tensor, tuple[torch.device, torch.Tensor | None]]:
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return torch.get_rng_state(), (device, cuda)


def _set_rng_state(state: tuple[torch.Tensor, tuple[torch.device, torch.Tensor | None]]
                   ) -> None:
    cpu, (device, cuda) = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state(cuda, device)


def _no_sync(encoder: nn.Module) -> contextlib.AbstractContextManager:
    """DDP's ``no_sync()`` (gradients reduced at the last chunk only); nothing otherwise."""
    no_sync = getattr(encoder, "no_sync", None)
    return no_sync() if callable(no_sync) else contextlib.nullcontext()


def _batch_norms(encoder: nn.Module) -> Iterator[nn.modules.batchnorm._BatchNorm]:
    return (m for m in encoder.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm))


def _running_statistics(encoder: nn.Module) -> dict[torch.Tensor, torch.Tensor]:
    """A copy of every BatchNorm buffer (running mean, variance, batch count)."""
    return {buffer: buffer.detach().clone() for module in _batch_norms(encoder)
            for buffer in module.buffers()}


@contextlib.contextmanager
def _frozen_batch_norm(encoder: nn.Module, frozen: bool) -> Iterator[None]:
    """With ``frozen``, every BatchNorm in eval mode (running statistics, no update) inside."""
    modules = [m for m in _batch_norms(encoder) if m.training] if frozen else []
    for module in modules:
        module.eval()
    try:
        yield
    finally:
        for module in modules:
            module.train()
