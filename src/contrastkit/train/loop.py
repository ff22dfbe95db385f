"""The pretraining loop: one plain function, :func:`pretrain`, driven by a config.

Per step: two augmented views of the batch (on the training device), the projector outputs
``z1, z2``, the loss of the global batch (under torch.distributed: each process's share, its
rows against the gathered batch, when every term supports it; otherwise the loss of the
gathered batch in every process), one optimizer step;
a check that the loss, parameters and buffers are finite (else :class:`TrainingDiverged`);
every ``checkpoint_every`` steps, a mid-epoch checkpoint.
Per epoch: metrics as a JSON line (loss parts, lr, in-batch similarity statistics,
throughput, ``collapsed_epochs``: the consecutive epochs so far whose embeddings collapsed;
with ``online_probe``, the online probe's accuracies: :mod:`.online_probe`),
an atomic checkpoint, then the user's callbacks ``callback(epochs_completed, metrics)``; after
``collapse_patience`` collapsed epochs in a row, :class:`~.stopping.TrainingCollapsed` (see
:mod:`.stopping`). The similarity statistics come from a
:class:`~contrastkit.monitor.SimilarityMonitor`, whose windows go to the loggers with each
epoch's metrics (:mod:`.monitoring`).
A checkpoint records where in the epoch it was taken and the epoch's running metric sums, so a
run resumed from any checkpoint continues exactly as if it had not stopped.

Epochs are counted as *completed epochs* everywhere: the checkpoint's ``epochs_completed``
(and ``step``, the steps done in the next epoch), metrics.jsonl's ``epochs_completed``, the
callbacks' argument, and the printed "epoch 50/50" (the 50th epoch).

Every setting is checked (device, dataset and its files, backbone, batch size, the user's own
encoder, dataset and augmentation: :mod:`.inputs`) before the run folder is touched; the
folder is then locked (:func:`~.run_folder.run_lock`) for the run.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from contrastkit.data.two_view import Augment
from contrastkit.files import RunFolderError, write_text_atomic
from contrastkit.threads import run_threads
from contrastkit.typing import Samples

from .batches import epoch_batches, epoch_loader
from .checkpoint import (
    EpochState,
    has_checkpoint,
    load_checkpoint,
    restore_training_state,
    save_checkpoint,
    seed_everything,
    training_state,
)
from .compiled import check_compilable, compiled
from .config import PretrainConfig
from .inputs import build_inputs, check_resumable
from .layout import encoder_in_layout
from .loggers import require_loggers
from .memory import peak_memory_mib, reset_peak_memory
from .monitoring import RunMonitor
from .objective import (
    add_loss_parameters,
    build_loss,
    embedding_dim,
    learned_metrics,
    local_share,
)
from .online_probe import RunProbe, run_probe
from .optim import build_optimizer, build_scheduler
from .plots import plot_run, read_metrics
from .precision import resolve_precision
from .progress import EpochReporter, epoch_progress
from .run_folder import (
    CONFIG,
    CURVES,
    METRICS,
    PHASE,
    append_metrics,
    check_same_config,
    check_same_data,
    remove_unsaved_run,
    run_lock,
    start_run_dir,
    truncate_metrics,
)
from .runtime import Runtime, parallel_model, start_runtime, together
from .step import StepContext, phase, train_step
from .stopping import (
    NonFiniteData,
    TrainingDiverged,
    all_finite,
    collapse_note,
    collapsed_stop,
    non_finite_data,
    non_finite_part,
    stop_requests,
    stopped_by,
)

Callback = Callable[[int, dict], None]


@dataclass
class PretrainResult:
    """What :func:`pretrain` returns: the run folder, the trained encoder (unwrapped from DDP;
    the user's own when one was given), the per-epoch metrics, and whether the run was already
    complete (nothing trained)."""

    run_dir: Path
    encoder: torch.nn.Module
    history: list[dict]
    already_complete: bool = False


def pretrain(config: PretrainConfig, resume: str | None = None, overwrite: bool = False,
             callbacks: Sequence[Callback] = (), *, encoder: torch.nn.Module | None = None,
             dataset: Samples | None = None, augment: Augment | None = None
             ) -> PretrainResult:
    """Pretrain ``config.backbone`` + projector on ``config.dataset`` with ``config.loss``, or
    the user's own ``encoder`` on their own ``dataset`` with their own ``augment``.

    Args:
        config: the run's configuration; the run folder is ``config.run_dir``.
        resume: ``"last"`` or ``"previous"`` continues from that checkpoint of the run folder
            exactly (model, optimizer, scheduler, fp16 gradient scaler, RNG states, sample order).
            ``config.epochs`` may be larger than the run's: the run is extended, the lr
            schedule becoming that of the longer run from the step reached. A run that has
            completed ``config.epochs`` returns at once with ``already_complete=True``.
        overwrite: start afresh even if the run folder already holds a run (its files, see
            ``RUN_FILES``, are removed; other files are kept).
        callbacks: called as ``callback(epochs_completed, metrics)`` after each epoch's
            checkpoint.
        encoder, dataset, augment: the user's own ``nn.Module`` (a batch to embeddings
            ``(B, d)``), map-style ``Dataset`` (items ``(x, label)`` or ``x``) and
            ``augment(batch, generator) -> view``, each replacing the config's built-in one
            (see :mod:`contrastkit.train.inputs`). The run's config records them; to resume
            the run, pass the same objects again.

    Raises:
        ValueError: a bad setting, or a run folder that cannot be used (in use by another
            run, not writable, disk full: :class:`~contrastkit.files.RunFolderError`).
        TrainingDiverged: a NaN or infinity appeared; the checkpoints are those from before.
        TrainingStopped: SIGTERM / SIGINT, after writing a checkpoint.
        TrainingCollapsed: (a ``TrainingDiverged``) the embeddings stayed collapsed for
            ``collapse_patience`` epochs (with ``stop_on_collapse``), after that epoch's
            checkpoint.
    """
    runtime = start_runtime(config.device)
    resolve_precision(config.precision, runtime.device)  # a GPU without bf16 stops here
    cpu_threads = (run_threads(torch.set_num_threads, torch.get_num_threads)
                   if runtime.device.type == "cpu" else contextlib.nullcontext())
    with cpu_threads:
        return _pretrain(config, runtime, resume, overwrite, callbacks, encoder, dataset,
                         augment)


def _pretrain(config: PretrainConfig, runtime: Runtime, resume: str | None, overwrite: bool,
              callbacks: Sequence[Callback], encoder: torch.nn.Module | None,
              dataset: Samples | None, augment: Augment | None) -> PretrainResult:
    """:func:`pretrain` on its started ``runtime``."""
    if config.compile:
        check_compilable(runtime.device)
    if resume is not None:
        check_resumable(config.run_dir / CONFIG, encoder=encoder, dataset=dataset,
                        augment=augment)
    seed_everything(config.seed)
    inputs = build_inputs(config, runtime.device, encoder, dataset, augment)
    config, dataset, encoder = inputs.config, inputs.dataset, inputs.encoder
    steps_per_epoch = len(epoch_batches(dataset, config.batch_size, config.seed, 0))
    probe = run_probe(config, dataset, runtime)
    require_loggers(config.logger)
    if Path(config.runs_dir).exists() and not Path(config.runs_dir).is_dir():
        raise ValueError(f"runs_dir must be a folder, but {config.runs_dir} is a file")
    # Every setting is valid: only now is the run folder created or changed.
    if resume is not None and not (config.run_dir / CONFIG).is_file():
        raise ValueError(f"cannot resume: {config.run_dir} holds no run "
                         f"({config.run_dir / CONFIG} is missing)")
    with contextlib.ExitStack() as held:
        def start() -> dict | None:
            if runtime.is_main:
                held.enter_context(run_lock(config.run_dir))
            if resume is None:
                start_run_dir(config, overwrite, runtime.is_main)
                return None
            return _resume_state(config, resume, runtime, len(dataset))

        state = together(runtime, start)  # a folder in use stops every process
        try:
            return _train(config, runtime, dataset, encoder, inputs.augment, steps_per_epoch,
                          state, resume, callbacks, probe)
        except RunFolderError:  # the folder itself failed (a full disk): leave it alone
            raise
        except Exception:
            if resume is None and runtime.is_main:
                remove_unsaved_run(config.run_dir)
            raise


def _train(config: PretrainConfig, runtime: Runtime, dataset: Samples, encoder: torch.nn.Module,
           augment: object, steps_per_epoch: int, state: dict | None, resume: str | None,
           callbacks: Sequence[Callback], probe: RunProbe) -> PretrainResult:
    """The training of :func:`pretrain` in a prepared, locked run folder, from the start or
    from the checkpoint ``state`` (read from ``resume``)."""
    run_dir = config.run_dir
    encoder_in_layout(encoder, runtime.device)
    # grad caching replays one tower at a time: the other's parameters are then unused
    model = parallel_model(encoder, runtime, find_unused=config.task == "image_text"
                      and 0 < config.grad_cache_chunk < config.batch_size // runtime.world_size)
    shares = runtime.world_size > 1 and local_share(config)
    loss_fn = build_loss(config, len(dataset), distributed=shares).to(runtime.device)
    optimizer = build_optimizer(config.optimizer, model, config.lr, config.momentum,
                                config.weight_decay, config.adamw_betas, config.adamw_eps)
    add_loss_parameters(optimizer, loss_fn)  # a learned temperature (learn_temperature)
    scheduler = build_scheduler(optimizer, config.warmup_steps(steps_per_epoch),
                                config.epochs * steps_per_epoch)
    precision = resolve_precision(config.precision, runtime.device)
    scaler = precision.scaler()
    generator = torch.Generator().manual_seed(config.seed)
    position = EpochState(epoch=0)
    if state is not None:
        position = restore_training_state(state, encoder, optimizer, scheduler, scaler,
                                          generator, loss_fn)
        if position.epoch >= config.epochs:
            return PretrainResult(run_dir, encoder, _history(run_dir, runtime), True)
    if runtime.is_main:
        truncate_metrics(run_dir / METRICS, position.epoch)
    monitor = RunMonitor(config, len(dataset), position.epoch * steps_per_epoch + position.step,
                         state, runtime.device, runtime.is_main)
    probe.restore(state)
    rotate = resume != "previous"  # last.pt is then suspect: replace it, keep previous.pt

    def save(epoch_state: EpochState, first: Callable[[], None] | None = None) -> None:
        """Checkpoint ``epoch_state`` after ``first()`` (the main process writes both); a
        failed write (a full disk) stops every process here."""
        nonlocal rotate

        def write() -> None:
            if runtime.is_main:
                if first is not None:
                    first()
                save_checkpoint(run_dir, training_state(
                    epoch_state, encoder, optimizer, scheduler, scaler, generator, config,
                    loss_fn, len(dataset)) | monitor.checkpoint_state()
                    | probe.checkpoint_state(), rotate=rotate)

        together(runtime, write)
        rotate = True

    step_model = compiled(model) if config.compile else model
    step_context = StepContext(step_model, loss_fn, augment, generator, optimizer, scheduler,
                                scaler, precision, runtime, config.batch_size, run_dir, shares,
                                config, monitor)
    showing = config.progress and runtime.is_main
    unit = "pairs/s" if config.task == "text_pairs" else "img/s"  # what a batch row is
    with (epoch_progress(showing, config.epochs, unit) as show,
          stop_requests(runtime.device) as stop, monitor):
        monitor.say = show.say if show.shows else None
        dim = embedding_dim(encoder, config)
        monitor.window_extra = lambda window: learned_metrics(
            loss_fn, config.batch_size, {"pos_sim_mean": window["positive_mean"],
                                         "neg_sim_mean": window["negative_mean"]}, dim)
        for epoch in range(position.epoch, config.epochs):
            epoch_state = position if epoch == position.epoch else EpochState(epoch)
            batches = epoch_batches(dataset, config.batch_size, config.seed, epoch,
                                    runtime.rank, runtime.world_size)
            loader = epoch_loader(dataset, batches[epoch_state.step:], config.num_workers,
                                  runtime.device, config.seed, epoch)
            metrics = _train_epoch(step_context, loader, epoch_state, len(batches), show,
                                   config.checkpoint_every, save, stop, batches)
            metrics.update(probe.epoch_done(encoder))
            collapsed = metrics["collapsed_epochs"] = monitor.epoch_collapse(metrics)
            show.epoch_done(metrics, collapse_note(collapsed, config))
            metrics.update(learned_metrics(loss_fn, config.batch_size, metrics, dim))

            def log_epoch(metrics: dict = metrics) -> None:
                append_metrics(run_dir / METRICS, metrics)
                monitor.epoch_done(metrics)

            save(EpochState(epoch + 1), log_epoch)
            for callback in callbacks:
                callback(epoch + 1, metrics)
            signal_number = stop()
            if signal_number and epoch + 1 < config.epochs:
                raise stopped_by(signal_number, epoch_state, len(batches), run_dir)
            if config.stop_on_collapse and collapsed >= config.collapse_patience:
                raise collapsed_stop(metrics, collapsed, config, len(batches), run_dir)
    history = _history(run_dir, runtime)
    if history:
        plot_run(config, history, _plotted_parts(loss_fn), run_dir / CURVES, run_dir / PHASE)
    return PretrainResult(run_dir, encoder, history)


def _history(run_dir: Path, runtime: Runtime) -> list[dict]:
    """The metrics of the run's epochs (in the main process; [] in the others)."""
    return read_metrics(run_dir / METRICS) if runtime.is_main else []


def _plotted_parts(loss_fn: torch.nn.Module) -> list[str]:
    """``loss`` and, for a sum of losses, each part's name."""
    parts = list(getattr(loss_fn, "part_names", []))
    return ["loss"] + (parts if len(parts) > 1 else [])


def _train_epoch(ctx: StepContext, loader: Iterable, state: EpochState, steps: int,
                 show: EpochReporter, checkpoint_every: int, save: Callable[[EpochState], None],
                 stop: Callable[[], int], batches: list[list[int]] | None = None) -> dict:
    """The rest of epoch ``state.epoch`` (``loader`` yields its remaining batches, those of
    ``batches``: the dataset indices of each of the epoch's batches), updating
    ``state`` after every step and saving it every ``checkpoint_every`` steps (0: never), or
    at once followed by :class:`TrainingStopped` when ``stop()`` reports a signal; raises
    :class:`TrainingDiverged` at a step that leaves a non-finite loss, parameter or buffer,
    and :class:`~.stopping.NonFiniteData` instead when a step fails (an error, or a
    non-finite state) on a batch holding a NaN or infinity; returns the epoch's metrics (means
    over all its steps)."""
    ctx.model.train()
    peak_is_this_epochs = reset_peak_memory(ctx.runtime.device)
    state.sums = sums = defaultdict(float, state.sums)  # updated in place, step by step
    first_step, seconds_before = state.step, state.seconds
    start = time.perf_counter()
    for images, labels, *captions in loader:
        lr = ctx.optimizer.param_groups[0]["lr"]
        items = batches[state.step] if batches is not None else None
        try:
            values = train_step(ctx, images, labels, *captions)
        except Exception as error:  # e.g. the loss's "u contains NaN or Inf values"
            bad = _bad_data(ctx, images, items, state, steps)
            if bad is None:
                raise
            raise bad from error
        with phase("check"):
            finite = all_finite(values["loss"], ctx.model, ctx.runtime.device)
        if not finite:
            raise (_bad_data(ctx, images, items, state, steps)
                   or _diverged(ctx, values["loss"], state, steps))
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
                raise stopped_by(signal_number, state, steps, ctx.run_dir)
    metrics = {"epochs_completed": state.epoch + 1, "lr": lr}
    metrics.update({key: total / steps for key, total in sums.items()})
    metrics.update({"images_per_s": steps * ctx.global_batch / state.seconds,
                    "epoch_seconds": state.seconds})
    peak = peak_memory_mib(ctx.runtime.device) if peak_is_this_epochs else None
    if peak is not None:  # of this process, and of the part of the epoch it ran
        metrics["peak_memory_mib"] = peak
    return metrics


def _bad_data(ctx: StepContext, images: torch.Tensor, items: list[int] | None,
              state: EpochState, steps: int) -> NonFiniteData | None:
    """The :class:`~.stopping.NonFiniteData` of the failed step ``state.step + 1`` when its batch
    ``images`` holds a NaN or infinity, else ``None`` (looked at only when a step fails, so a
    healthy step pays nothing)."""
    return non_finite_data(images, items, state.epoch + 1, state.step + 1, steps,
                           _what_is_kept(ctx.run_dir))


def _what_is_kept(run_dir: Path) -> str:
    """What a run that fails now leaves: its checkpoints from before, or, a run without one
    yet, nothing (:func:`pretrain` removes the folder's run files)."""
    if has_checkpoint(run_dir):
        return f"nothing of that step was saved (the checkpoints in {run_dir} are from before)"
    return f"the run had no checkpoint yet, so its files in {run_dir} are removed"


def _diverged(ctx: StepContext, loss: float, state: EpochState, steps: int
              ) -> TrainingDiverged:
    part = non_finite_part(loss, ctx.model, gradients=not ctx.precision.scaled)
    config, step = ctx.config, state.step + 1
    full = (f", or precision=fp32 (now {ctx.precision.name})"
            if ctx.precision.autocast_dtype is not None else "")
    return TrainingDiverged(
        f"training diverged at step {step}/{steps} of epoch {state.epoch + 1}: {part} is not "
        f"finite; {_what_is_kept(ctx.run_dir)}. "
        f"Try a lower base_lr (now {config.peak_base_lr}), a longer warm-up (warmup_epochs, now "
        f"{config.warmup_epochs}){full}", state.epoch + 1, step, part)


def _resume_state(config: PretrainConfig, resume: str, runtime: Runtime, train_size: int
                  ) -> dict:
    """The checkpoint ``resume`` of the (locked) run folder, after checking that ``config`` is
    the run's, with possibly more ``epochs``, and that its training set has the run's size
    (``train_size`` images now); the run's config.yaml then records the new ``epochs``."""
    saved = config.run_dir / CONFIG
    saved_epochs = check_same_config(config, saved)
    state = load_checkpoint(config.run_dir, resume)
    check_same_data(state, train_size, config)
    if runtime.is_main and config.epochs != saved_epochs:
        write_text_atomic(saved, config.to_yaml())
    return state
