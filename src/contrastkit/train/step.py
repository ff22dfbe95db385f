"""One pretraining step: two augmented views (``task=image_text``: one view of each image and
one of its captions; ``task=text_pairs``: the anchors' and positives' tokens, and the negatives'),
the embeddings, the loss of the global batch, its gradient (plainly or by
gradient caching), the optimizer step, and the similarity monitor.

Each phase runs under ``torch.profiler.record_function("contrastkit/<phase>")`` (:data:`PHASES`),
so a profile of a run (``torch.profiler.profile``, or ``benchmarks/train_step.py``) says where a
step's time goes; outside a profiler a label costs about a microsecond. Loading the batch is
labelled by PyTorch's DataLoader itself (``enumerate(DataLoader)#...``).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.optim.lr_scheduler import LambdaLR
from torch.profiler import record_function

from contrastkit import distributed
from contrastkit.losses import ContrastiveLoss, LossOutput

from .config import PretrainConfig
from .grad_cache import GatheredLoss, gathered_negatives, grad_cache
from .image_text import TOWERS, drawn_captions
from .inputs import two_views, unit_scaled
from .layout import images_in_layout
from .monitoring import RunMonitor
from .objective import average_loss_gradients
from .precision import Precision
from .runtime import Runtime
from .text_pairs import negative_embeddings

# The labelled phases of a step, in order (a cached step's forward, loss and backward are one:
# its chunks interleave them; ``check``, the test that the step left everything finite, is the
# training loop's).
PHASES = ("augment", "forward", "loss", "backward", "grad_cache", "optimizer", "monitor",
          "check")


def phase(name: str) -> record_function:
    """The profiler label of one of :data:`PHASES`."""
    return record_function(f"contrastkit/{name}")


@dataclass
class StepContext:
    """What every step of a run uses."""

    model: torch.nn.Module
    loss_fn: ContrastiveLoss
    augment: Any  # a SimCLRAugment (sample, apply), or the user's augment(images, generator)
    generator: torch.Generator
    optimizer: torch.optim.Optimizer
    scheduler: LambdaLR
    scaler: torch.amp.GradScaler
    precision: Precision
    runtime: Runtime
    global_batch: int
    run_dir: Path
    shares: bool  # the loss computes this process's share (losses' distributed=True)
    config: PretrainConfig
    monitor: RunMonitor  # the similarity statistics of each step, and the loggers


def train_step(ctx: StepContext, images: torch.Tensor, labels: torch.Tensor,
               *captions: torch.Tensor) -> dict:
    """One optimizer step on this process's ``images`` (and, for ``task=image_text``, their
    ``captions``: the tokens and counts of
    :class:`~contrastkit.train.image_text.TokenizedCaptions`; for ``task=text_pairs``,
    ``images`` are the anchors' tokens and ``captions`` the positives' and, when the rows have
    them, the negatives' of :class:`~contrastkit.train.text_pairs.TokenizedPairs`); the step's
    loss values and the monitor's statistics of its global batch."""
    device, runtime = ctx.runtime.device, ctx.runtime
    dtype = torch.get_default_dtype()  # float32 unless a caller (e.g. an exactness test) sets it
    with phase("augment"):
        views, towers, negatives = _views(ctx, images, captions, dtype)
    loss_labels = labels.to(device) if ctx.loss_fn.uses_labels else None
    ctx.optimizer.zero_grad(set_to_none=True)
    if 0 < ctx.config.grad_cache_chunk < images.shape[0]:
        with phase("grad_cache"):
            output, z1, z2 = _cached_backward(ctx, views, loss_labels, towers, negatives)
    else:
        output, z1, z2 = _plain_backward(ctx, views, loss_labels, dtype, towers, negatives)
    with phase("optimizer"):
        if runtime.world_size > 1:
            average_loss_gradients(ctx.loss_fn)
        ctx.scaler.step(ctx.optimizer)
        ctx.scaler.update()
        with _skipped_steps_expected(ctx.precision.scaled):
            ctx.scheduler.step()
    with phase("monitor"):
        prepared = ctx.monitor.prepare(z1, z2, labels)
    names, losses = output.stacked()
    if ctx.shares:  # the mean of the shares is the global batch's value
        losses = distributed.all_reduce_mean(losses)
    # The step's one read, at its end: each copy to the host waits for the GPU, which then
    # idles until the host has queued the next work.
    numbers = torch.cat([losses.to(prepared.numbers.device), prepared.numbers]).tolist()
    values = dict(zip(names, numbers, strict=False))
    return values | ctx.monitor.record(prepared, numbers[len(names):])


def _views(ctx: StepContext, batch: torch.Tensor, captions: tuple[torch.Tensor, ...],
           dtype: torch.dtype
           ) -> tuple[list[torch.Tensor], tuple[str, str] | None, torch.Tensor | None]:
    """The step's two views on the device, the towers that embed them (``None``: the one
    encoder embeds both), and the negatives' inputs (``None`` without)."""
    device, runtime = ctx.runtime.device, ctx.runtime
    if ctx.config.task == "text_pairs":  # tokens: the anchors, positives and negatives
        tokens = [part.to(device, non_blocking=True) for part in (batch, *captions)]
        return tokens[:2], None, tokens[2] if len(tokens) > 2 else None
    images = unit_scaled(batch.to(device, non_blocking=True), dtype)
    local = slice(runtime.rank * images.shape[0], (runtime.rank + 1) * images.shape[0])
    if not captions:
        return [images_in_layout(view) for view in
                two_views(ctx.augment, images, ctx.generator, ctx.global_batch, local)], None, None
    augment = ctx.augment
    view = images_in_layout(augment.apply(
        images, augment.sample(ctx.global_batch, ctx.generator)[local]))
    caption_tokens, counts = captions
    return [view, drawn_captions(caption_tokens.to(device, non_blocking=True), counts,
                                 ctx.generator, ctx.global_batch, local)], TOWERS, None


@contextlib.contextmanager
def _skipped_steps_expected(scaled: bool) -> Iterator[None]:
    """Under fp16's ``GradScaler`` a step with overflowing gradients is skipped on purpose (the
    first steps while the scale calibrates): the schedule moves on regardless, without
    PyTorch's warning that the optimizer did not step."""
    if not scaled:
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step",
                                category=UserWarning)
        yield


def _plain_backward(ctx: StepContext, views: list[torch.Tensor], labels: torch.Tensor | None,
                    dtype: torch.dtype, towers: tuple[str, str] | None = None,
                    negatives: torch.Tensor | None = None
                    ) -> tuple[LossOutput, torch.Tensor, torch.Tensor]:
    """Forward both views (through ``towers``' tower each, when given) and the ``negatives``'
    inputs ``(B, k, ...)``, back-propagate the loss of the global batch; the loss's output (its
    values, on the device) and the gathered embeddings (detached)."""
    with phase("forward"), ctx.precision.autocast():
        if towers is None:
            z1, z2 = (ctx.model(view) for view in views)
        else:
            z1, z2 = (ctx.model(view, tower=tower) for view, tower in zip(views, towers,
                                                                          strict=True))
        zn = None
        if negatives is not None:  # each row's own (B, k, d), or their pool (B k, d)
            zn = negative_embeddings(ctx.model(negatives.flatten(0, 1)).unflatten(
                0, negatives.shape[:2]), ctx.config.text_negatives)
    # Under bf16/fp16 the loss takes the half-precision embeddings as they come: its
    # similarity products run in that format (tensor cores), its reductions in float32.
    with phase("loss"), ctx.precision.autocast():
        if ctx.precision.autocast_dtype is None:
            z1, z2 = z1.to(dtype), z2.to(dtype)
            zn = None if zn is None else zn.to(dtype)
        extra = {} if zn is None else {"negatives": zn}
        if ctx.shares:  # local rows against the gathered batch; log the mean of the shares
            output = ctx.loss_fn.compute(z1, z2, labels, **extra)
            z1, z2 = distributed.gather(z1.detach()), distributed.gather(z2.detach())
        else:  # every process computes the loss of the whole gathered batch
            z1, z2 = distributed.gather(z1), distributed.gather(z2)
            labels = None if labels is None else distributed.gather(labels)
            if zn is not None:
                extra["negatives"] = gathered_negatives(zn)
            output = ctx.loss_fn.compute(z1, z2, labels, **extra)
    with phase("backward"):
        ctx.scaler.scale(output.total).backward()
    return output, z1.detach(), z2.detach()


def _cached_backward(ctx: StepContext, views: list[torch.Tensor], labels: torch.Tensor | None,
                     towers: tuple[str, str] | None = None,
                     negatives: torch.Tensor | None = None
                     ) -> tuple[LossOutput, torch.Tensor, torch.Tensor]:
    """:func:`_plain_backward`'s result by gradient caching, ``grad_cache_chunk`` rows of
    this process's views at a time."""
    criterion = ctx.loss_fn if ctx.shares else GatheredLoss(ctx.loss_fn)
    if negatives is not None and ctx.config.text_negatives == "pool":
        negatives = negatives.flatten(0, 1)  # the inputs of a pool (B k, ...)
    # with return_embeddings a pair; grad_cache's annotation is the union of its two forms
    output, (z1, z2) = grad_cache(ctx.model, criterion, views[0], views[1],  # type: ignore[misc]
                                  ctx.config.grad_cache_chunk, labels,
                                  precision=ctx.precision.name,
                                  scaler=ctx.scaler, return_embeddings=True, towers=towers,
                                  negatives=negatives)
    return output, distributed.gather(z1), distributed.gather(z2)
