"""The pretraining loop: one plain function, :func:`pretrain`, driven by a config.

Per step: two augmented views of the batch (on the training device), the projector outputs
``z1, z2``, the loss of the global batch (under torch.distributed: each process's share, its
rows against the gathered batch, when every term supports it; otherwise the loss of the
gathered batch in every process), one optimizer step;
every ``checkpoint_every`` steps, a mid-epoch checkpoint.
Per epoch: metrics as a JSON line (loss parts, lr, in-batch similarity statistics,
throughput), an atomic checkpoint, then the user's callbacks ``callback(epoch, metrics)``.
A checkpoint records where in the epoch it was taken and the epoch's running metric sums, so a
run resumed from any checkpoint continues exactly as if it had not stopped.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from contrastkit import distributed
from contrastkit.data import augmentation_for, load_dataset, pretrain_split
from contrastkit.geometry import similarity_stats
from contrastkit.models import Encoder, build_encoder, convert_to_global_batch_norm

from .batches import batch_loader, local_batches
from .checkpoint import load_checkpoint, save_checkpoint
from .config import PretrainConfig
from .objective import build_loss, local_share
from .optim import build_optimizer, build_scheduler
from .plots import plot_curves, read_metrics
from .progress import epoch_progress
from .runtime import Runtime, start_runtime
from .stopping import TrainingStopped, stop_requests

Callback = Callable[[int, dict], None]
METRICS = "metrics.jsonl"
CONFIG = "config.yaml"
CURVES = "curves.png"


@dataclass
class PretrainResult:
    """What :func:`pretrain` returns: the run folder, the trained encoder (unwrapped from DDP)
    and the per-epoch metrics."""

    run_dir: Path
    encoder: Encoder
    history: list[dict]


def pretrain(config: PretrainConfig, resume: str | None = None, overwrite: bool = False,
             callbacks: Sequence[Callback] = ()) -> PretrainResult:
    """Pretrain ``config.backbone`` + projector on ``config.dataset`` with ``config.loss``.

    Args:
        config: the run's configuration; the run folder is ``config.run_dir``.
        resume: ``"last"`` or ``"previous"`` continues from that checkpoint of the run folder
            exactly (model, optimizer, scheduler, AMP scaler, every RNG state, sample order).
        overwrite: start afresh even if the run folder already holds checkpoints.
        callbacks: called as ``callback(epoch, metrics)`` after each epoch's checkpoint.
    """
    runtime = start_runtime(config.device)
    run_dir = config.run_dir
    _prepare_run_dir(config, run_dir, resume, overwrite, runtime)
    dataset = load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir,
                           config.download)
    info = dataset.info
    _seed_everything(config.seed)
    augment = augmentation_for(config.dataset, info.image_size)
    encoder = build_encoder(config.backbone, info.channels, info.mean, info.std,
                            config.projector_hidden, config.projector_out).to(runtime.device)
    model = _parallel(encoder, runtime)
    shares = runtime.world_size > 1 and local_share(config)
    loss_fn = build_loss(config, len(dataset), distributed=shares)
    steps_per_epoch = len(local_batches(len(dataset), config.batch_size, config.seed, 0))
    optimizer = build_optimizer(config.optimizer, model, config.lr, config.momentum,
                                config.weight_decay)
    scheduler = build_scheduler(optimizer, config.warmup_epochs * steps_per_epoch,
                                config.epochs * steps_per_epoch)
    use_amp = config.amp and runtime.device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    generator = torch.Generator().manual_seed(config.seed)
    position = _EpochState(epoch=0)
    if resume is not None:
        state = load_checkpoint(run_dir, resume)
        encoder.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        scaler.load_state_dict(state["scaler"])
        generator.set_state(state["augment_rng"])
        _restore_rng(state["rng"])
        position = _EpochState.resumed_from(state, steps_per_epoch)
    if runtime.is_main:
        _truncate_metrics(run_dir / METRICS, position.epoch)

    def save(epoch_state: _EpochState) -> None:
        if runtime.is_main:
            save_checkpoint(run_dir, _checkpoint_state(
                epoch_state, encoder, optimizer, scheduler, scaler, generator, config))

    step_context = _StepContext(model, loss_fn, augment, generator, optimizer, scheduler,
                                scaler, use_amp, runtime, config.batch_size, run_dir, shares)
    showing = config.progress and runtime.is_main
    with epoch_progress(showing, config.epochs) as show, stop_requests(runtime.device) as stop:
        for epoch in range(position.epoch, config.epochs):
            epoch_state = position if epoch == position.epoch else _EpochState(epoch)
            batches = local_batches(len(dataset), config.batch_size, config.seed, epoch,
                                    runtime.rank, runtime.world_size)
            loader = batch_loader(dataset, batches[epoch_state.step:], config.num_workers,
                                  pin_memory=runtime.device.type == "cuda")
            metrics = _train_epoch(step_context, loader, epoch_state, len(batches), show,
                                   config.checkpoint_every, save, stop)
            show.epoch_done(metrics)
            if runtime.is_main:
                with open(run_dir / METRICS, "a") as handle:
                    handle.write(json.dumps(metrics) + "\n")
            save(epoch_state)
            for callback in callbacks:
                callback(epoch, metrics)
            signal_number = stop()
            if signal_number and epoch + 1 < config.epochs:
                raise _stopped(signal_number, epoch_state, len(batches), run_dir)
    history = read_metrics(run_dir / METRICS) if runtime.is_main else []
    if runtime.is_main and history:
        plot_curves(history, _plotted_parts(loss_fn), run_dir / CURVES)
    return PretrainResult(run_dir, encoder, history)


def _plotted_parts(loss_fn) -> list[str]:
    """``loss`` and, for a sum of losses, each part's name."""
    parts = list(getattr(loss_fn, "part_names", []))
    return ["loss"] + (parts if len(parts) > 1 else [])


@dataclass
class _StepContext:
    model: torch.nn.Module
    loss_fn: torch.nn.Module
    augment: object
    generator: torch.Generator
    optimizer: torch.optim.Optimizer
    scheduler: object
    scaler: torch.amp.GradScaler
    use_amp: bool
    runtime: Runtime
    global_batch: int
    run_dir: Path
    shares: bool  # the loss computes this process's share (losses' distributed=True)


@dataclass
class _EpochState:
    """How far an epoch has got: steps done, the running sums of the step metrics and the
    training seconds so far. Checkpoints carry it, so a resumed epoch continues its sums."""

    epoch: int
    step: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @classmethod
    def resumed_from(cls, checkpoint: dict, steps_per_epoch: int) -> _EpochState:
        """Where a run continues from ``checkpoint``: inside its epoch, or at the next one."""
        state = cls(checkpoint["epoch"], checkpoint["step"], dict(checkpoint["epoch_sums"]),
                    checkpoint["epoch_seconds"])
        return cls(state.epoch + 1) if state.step >= steps_per_epoch else state


def _train_epoch(ctx: _StepContext, loader, state: _EpochState, steps: int, show,
                 checkpoint_every: int, save: Callable[[_EpochState], None],
                 stop: Callable[[], int]) -> dict:
    """The rest of epoch ``state.epoch`` (``loader`` yields its remaining batches), updating
    ``state`` after every step and saving it every ``checkpoint_every`` steps (0: never), or
    at once followed by :class:`TrainingStopped` when ``stop()`` reports a signal; returns the
    epoch's metrics (means over all its steps)."""
    ctx.model.train()
    state.sums = sums = defaultdict(float, state.sums)  # updated in place, step by step
    first_step, seconds_before = state.step, state.seconds
    start = time.perf_counter()
    for images, labels in loader:
        lr = ctx.optimizer.param_groups[0]["lr"]
        values = _train_step(ctx, images, labels)
        for key, value in values.items():
            sums[key] += value
        elapsed = time.perf_counter() - start
        state.step, state.seconds = state.step + 1, seconds_before + elapsed
        show(state.epoch, state.step, steps, values["loss"],
             (state.step - first_step) * ctx.global_batch / elapsed)
        if state.step < steps:  # the epoch's last step is checkpointed by the caller
            signal_number = stop()
            if signal_number or (checkpoint_every and state.step % checkpoint_every == 0):
                save(state)
            if signal_number:
                raise _stopped(signal_number, state, steps, ctx.run_dir)
    metrics = {"epoch": state.epoch, "lr": lr}
    metrics.update({key: total / steps for key, total in sums.items()})
    metrics.update({"images_per_s": steps * ctx.global_batch / state.seconds,
                    "epoch_seconds": state.seconds})
    return metrics


def _stopped(signal_number: int, state: _EpochState, steps: int, run_dir: Path):
    return TrainingStopped(
        f"training stopped by {signal.Signals(signal_number).name} after step {state.step}/"
        f"{steps} of epoch {state.epoch + 1}, with a checkpoint in {run_dir}; continue it with "
        f"`contrastkit pretrain <same settings> --resume`", signal_number)


def _train_step(ctx: _StepContext, images: torch.Tensor, labels: torch.Tensor) -> dict:
    device, runtime = ctx.runtime.device, ctx.runtime
    images = images.to(device, non_blocking=True).float().div_(255)
    local = slice(runtime.rank * images.shape[0], (runtime.rank + 1) * images.shape[0])
    views = [ctx.augment.apply(images, ctx.augment.sample(ctx.global_batch, ctx.generator)[local])
             for _ in range(2)]
    with torch.autocast(device.type, enabled=ctx.use_amp):
        z1, z2 = (ctx.model(view) for view in views)
    z1, z2 = z1.float(), z2.float()
    labels = labels.to(device) if ctx.loss_fn.uses_labels else None
    if ctx.shares:  # local rows against the gathered batch; log the mean of the shares
        output = ctx.loss_fn.compute(z1, z2, labels)
        values = _mean_over_processes(output.as_floats(), device)
        z1, z2 = distributed.gather(z1.detach()), distributed.gather(z2.detach())
    else:  # every process computes the loss of the whole gathered batch
        z1, z2 = distributed.gather(z1), distributed.gather(z2)
        labels = None if labels is None else distributed.gather(labels)
        output = ctx.loss_fn.compute(z1, z2, labels)
        values = output.as_floats()
    ctx.optimizer.zero_grad(set_to_none=True)
    ctx.scaler.scale(output.total).backward()
    ctx.scaler.step(ctx.optimizer)
    ctx.scaler.update()
    ctx.scheduler.step()
    stats = similarity_stats(z1, z2)
    values.update({"pos_sim_mean": stats.positive_mean, "neg_sim_mean": stats.negative_mean,
                   "neg_sim_var": stats.negative_var})
    return values


def _mean_over_processes(values: dict[str, float], device: torch.device) -> dict[str, float]:
    """Each value's mean over processes: the mean of the shares is the global-batch value."""
    means = distributed.all_reduce_mean(torch.tensor(list(values.values()), device=device))
    return dict(zip(values, means.tolist(), strict=True))


def _parallel(encoder: Encoder, runtime: Runtime) -> torch.nn.Module:
    if runtime.world_size == 1:
        return encoder
    convert_to_global_batch_norm(encoder, runtime.device)
    device_ids = [runtime.device.index] if runtime.device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(encoder, device_ids=device_ids)


def _prepare_run_dir(config, run_dir: Path, resume, overwrite: bool, runtime: Runtime) -> None:
    saved = run_dir / CONFIG
    if resume is not None:
        if not saved.is_file():
            raise ValueError(f"cannot resume: {run_dir} holds no run ({saved} is missing)")
        _check_same_config(config, saved)
        return
    if (run_dir / "last.pt").exists() and not overwrite:
        raise ValueError(f"run folder {run_dir} already holds a run; pass --resume to continue "
                         f"it, --overwrite to start it again, or name=<new name>")
    if runtime.is_main:
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("last.pt", "previous.pt", METRICS, CURVES):
            (run_dir / stale).unlink(missing_ok=True)
        saved.write_text(config.to_yaml())


def _check_same_config(config: PretrainConfig, saved: Path) -> None:
    import yaml

    before = yaml.safe_load(saved.read_text())
    now = config.to_dict()
    # These change how a run executes, not what it computes.
    free = {"progress", "num_workers", "device", "data_dir", "checkpoint_every"}
    differ = sorted(k for k in now if k not in free and before.get(k) != now[k])
    if differ:
        listed = ", ".join(f"{k}: {before.get(k)!r} -> {now[k]!r}" for k in differ)
        raise ValueError(f"cannot resume with a different config ({listed}); resume with the "
                         f"saved config {saved}")


def _checkpoint_state(epoch_state: _EpochState, encoder, optimizer, scheduler, scaler, generator,
                      config) -> dict:
    return {
        "epoch": epoch_state.epoch,
        "step": epoch_state.step,
        "epoch_sums": dict(epoch_state.sums),
        "epoch_seconds": epoch_state.seconds,
        "config": config.to_dict(),
        "model": encoder.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "augment_rng": generator.get_state(),
        "rng": {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "numpy": np.random.get_state(),
            "python": random.getstate(),
        },
    }


def _seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def _restore_rng(rng: dict) -> None:
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["python"])


def _truncate_metrics(path: Path, start_epoch: int) -> None:
    """Drop the metric lines of epochs that a resumed run will redo."""
    kept = [m for m in read_metrics(path) if m["epoch"] < start_epoch]
    path.write_text("".join(json.dumps(m) + "\n" for m in kept))
