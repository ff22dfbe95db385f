"""The built-in trainer's similarity monitor and loggers (:class:`RunMonitor`).

The trainer feeds :class:`~contrastkit.monitor.SimilarityMonitor` (``n`` = the dataset size,
windows of ``log_every`` steps) the global batch's two views at every step, as any training
loop can, with the batch's class ids when every row has one: they count the same-class false
negatives (not the monitor's class split of the moments, which would wait for the GPU at each
step). Of each step it keeps the in-batch statistics of metrics.jsonl (``pos_sim_mean``,
``neg_sim_mean``, ``neg_sim_var``, and the false negatives' ``neg_above_pos_share`` and
``neg_above_band_share``: the step's batch, averaged over the epoch); each window's
statistics and theory reference values go to the loggers as ``monitor/<name>`` at the global
step, each epoch's metrics as ``epoch/<name>``, and the monitor's warnings (given once, on the
main process) as the note ``monitor/alert``; in the trainer a warning is one line of the
progress output (``monitor: ...``), not a raw Python warning. A checkpoint carries the
monitor's state, so a resumed run neither loses nor repeats a step of a window.

**Collapse.** An epoch is *collapsed* when its ``neg_sim_mean`` (the mean cosine similarity of
the in-batch negative pairs, averaged over the epoch's steps) is above
:data:`COLLAPSE_NEG_SIM_MEAN`, 0.9: the embeddings of different images are then nearly one
point. The central paper (Lee et al., ICML 2025, arXiv:2506.09781) puts a trained model's
negative mean at ``-1/(n-1)``, about 0, at the full-batch optimum (Theorem 5.1), and a healthy
run gets there within a few epochs (digits: 0.001 at the end of the default run); a fresh
projector (Linear-BN-ReLU-Linear) starts near 0.3, and complete collapse is 1 with variance 0
(batch 1024 at peak lr 1.2 on the digits: 0.996, variance 0.0000, from the second epoch on).
The variance needs no test of its own: cosines are at most 1, so a mean ``m`` bounds it by
``(1 - m)(1 + m)``, 0.19 at 0.9. The threshold is the :class:`SimilarityMonitor`'s own
``collapse_similarity``; the monitor's other collapse test, an effective rank below 1.5, is
not used: in that collapsed run the window's effective rank was 19 (a narrow cone has many
small directions). :meth:`RunMonitor.epoch_collapse` counts the consecutive collapsed epochs,
which metrics.jsonl records as ``collapsed_epochs`` and a checkpoint carries.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch

from contrastkit import distributed
from contrastkit.monitor import PreparedBatch, SimilarityMonitor

from .config import PretrainConfig
from .inputs import UNLABELED
from .loggers import Loggers, clear_logs, open_loggers

# metrics.jsonl's per-step similarity statistics, and the monitor's names for them.
STEP_METRICS = {"pos_sim_mean": "positive_mean", "neg_sim_mean": "negative_mean",
                "neg_sim_var": "negative_var",
                "neg_above_pos_share": "negatives_above_positive_share",
                "neg_above_band_share": "negatives_above_band_share"}
WINDOW_PREFIX = "monitor/"
EPOCH_PREFIX = "epoch/"
ALERT_TAG = "monitor/alert"
#: An epoch whose in-batch negative-pair similarity mean is above this is collapsed (the
#: :class:`SimilarityMonitor`'s default ``collapse_similarity``).
COLLAPSE_NEG_SIM_MEAN = 0.9


def is_collapsed(metrics: dict) -> bool:
    """Whether an epoch's ``metrics`` show collapse: ``neg_sim_mean`` above
    :data:`COLLAPSE_NEG_SIM_MEAN` (a NaN mean is not collapse: it is divergence's business)."""
    return metrics.get("neg_sim_mean", math.nan) > COLLAPSE_NEG_SIM_MEAN


class RunMonitor:
    """A :class:`SimilarityMonitor` and the run's loggers (opened, on the main process only,
    while the object is used as a context manager, and closed however the block ends).

    Args:
        config: the run's settings (``log_every``, ``logger``, the run folder).
        dataset_size: ``n`` of the monitor.
        steps_done: the global steps already trained (the monitor's step when ``state``
            carries no monitor state, as a checkpoint of an earlier contrastkit, or one that
            cannot be read).
        state: the checkpoint the run resumes from, or ``None``.
        device: where the window's tensors go when restored.
        is_main: whether this process logs and warns.
    """

    def __init__(self, config: PretrainConfig, dataset_size: int, steps_done: int,
                 state: dict | None, device: torch.device, is_main: bool) -> None:
        self.config, self.is_main = config, is_main
        self.monitor = SimilarityMonitor(n=dataset_size, log_every=config.log_every,
                                         split_classes=False)
        self.monitor.step = steps_done
        if state is not None and "monitor" in state:
            self._restore(state["monitor"], device)
        # consecutive collapsed epochs up to the last completed one (a checkpoint of an
        # earlier contrastkit has none: 0)
        self.collapsed_epochs = int((state or {}).get("collapsed_epochs", 0))
        self.loggers = Loggers([])
        #: Where the monitor's warnings go on the main process: one line each (the progress
        #: output's), or, when ``None``, a Python ``RuntimeWarning``.
        self.say: Callable[[str], None] | None = None
        #: What each finished window adds to its logged statistics, from them: for a run that
        #: learns SigLIP's scale and bias, where ``(t, b)`` sits on the sigmoid loss's phase
        #: diagram (the loop sets it; ``None``: nothing).
        self.window_extra: Callable[[dict], dict] | None = None

    def _restore(self, state: dict, device: torch.device) -> None:
        """Continue the monitor from a checkpoint's state; one this version cannot read costs
        the current window's statistics, not the run (a warning says so)."""
        try:
            self.monitor.load_state_dict(state, map_location=device)
        except ValueError as error:
            warnings.warn(f"the similarity monitor's window cannot be restored from the "
                          f"checkpoint ({error}); a new window starts at step "
                          f"{self.monitor.step}", RuntimeWarning, stacklevel=3)

    def __enter__(self) -> RunMonitor:
        if self.is_main:
            run_dir, resumed_at = self.config.run_dir, self.monitor.step
            if not resumed_at:
                clear_logs(run_dir)
            self.loggers = open_loggers(self.config.logger, run_dir, resumed_at,
                                        self.config.name, self.config.to_dict())
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.loggers.close(failed=kind is not None)

    def prepare(self, z1: torch.Tensor, z2: torch.Tensor,
                labels: torch.Tensor | None = None) -> PreparedBatch:
        """Compute one step's global batch's statistics (both views) on its device, without
        waiting for it (:meth:`SimilarityMonitor.prepare`): the step reads their ``numbers``
        with its loss values, in one transfer, and gives them to :meth:`record`. ``labels``
        are this process's rows' class ids as the loader gives them, on the CPU (-1: none);
        when every row has one they are gathered with the batch for the false-negative
        counts."""
        if labels is not None and bool((labels != UNLABELED).all()):  # on the CPU: no wait
            labels = distributed.gather(labels.to(z1.device, non_blocking=True))
        else:
            labels = None
        return self.monitor.prepare(z1, z2, labels)

    def record(self, prepared: PreparedBatch, numbers: list[float]) -> dict[str, float]:
        """Add the batch of :meth:`prepare` given the host copy of its ``numbers``; log a
        finished window and any new warning; return the batch's :data:`STEP_METRICS` (NaN
        for a batch with a non-finite embedding)."""
        alerted = set(self.monitor.alerts)
        with warnings.catch_warnings():
            # given below, once, by the main process (every process would repeat it)
            warnings.simplefilter("ignore")
            window = self.monitor.add_prepared(prepared, numbers)
        step = self.monitor.step
        if window is not None:
            extra = self.window_extra(window) if self.window_extra is not None else {}
            logged = {**window, **{name: value for name, value in extra.items()
                                   if not isinstance(value, str)}}
            self.loggers.log(step, {WINDOW_PREFIX + name: value for name, value in logged.items()})
            for name, value in extra.items():
                if isinstance(value, str):
                    self.loggers.note(step, WINDOW_PREFIX + name, value)
        for name in sorted(self.monitor.alerts.keys() - alerted):
            self.loggers.note(step, ALERT_TAG, self.monitor.alerts[name])
            self._tell(self.monitor.alerts[name])
        batch = self.monitor.last_batch or {}
        return {key: batch.get(name, math.nan) for key, name in STEP_METRICS.items()}

    def _tell(self, message: str) -> None:
        """A monitor's warning, on the main process: a line of the progress output, or a
        ``RuntimeWarning`` without one."""
        if not self.is_main:
            return
        if self.say is not None:
            self.say(f"monitor: {message}")
        else:
            warnings.warn(f"SimilarityMonitor: {message}", RuntimeWarning, stacklevel=4)

    def epoch_collapse(self, metrics: dict) -> int:
        """Count an epoch (its ``metrics``) in the run of consecutive collapsed epochs
        (:func:`is_collapsed`); the run's length so far, 0 after a healthy epoch."""
        self.collapsed_epochs = self.collapsed_epochs + 1 if is_collapsed(metrics) else 0
        return self.collapsed_epochs

    def epoch_done(self, metrics: dict[str, float]) -> None:
        """Log an epoch's metrics (those of its metrics.jsonl line) at the global step: the
        numbers as values, a text (e.g. ``siglip_regime``) as a message."""
        numbers = {EPOCH_PREFIX + name: value for name, value in metrics.items()
                   if not isinstance(value, str)}
        self.loggers.log(self.monitor.step, numbers)
        for name, value in metrics.items():
            if isinstance(value, str):
                self.loggers.note(self.monitor.step, EPOCH_PREFIX + name, value)

    def checkpoint_state(self) -> dict:
        """What a checkpoint holds of it (``{"monitor": state, "collapsed_epochs": count}``),
        once everything logged so far is written out: a run resumed from the checkpoint then
        loses no logged step."""
        self.loggers.flush()
        return {"monitor": self.monitor.state_dict(), "collapsed_epochs": self.collapsed_epochs}
