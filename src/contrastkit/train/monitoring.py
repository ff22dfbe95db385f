"""The built-in trainer's similarity monitor and loggers (:class:`RunMonitor`).

The trainer feeds :class:`~contrastkit.monitor.SimilarityMonitor` (``n`` = the dataset size,
windows of ``log_every`` steps) the global batch's two views at every step, as any training
loop can. Of each step it keeps the in-batch statistics of metrics.jsonl (``pos_sim_mean``,
``neg_sim_mean``, ``neg_sim_var``: the step's batch, averaged over the epoch); each window's
statistics and theory reference values go to the loggers as ``monitor/<name>`` at the global
step, each epoch's metrics as ``epoch/<name>``, and the monitor's warnings (given once, on the
main process) as the note ``monitor/alert``. A checkpoint carries the monitor's state, so a
resumed run neither loses nor repeats a step of a window.
"""

from __future__ import annotations

import math
import warnings

import torch

from contrastkit.monitor import SimilarityMonitor

from .config import PretrainConfig
from .loggers import Loggers, clear_logs, open_loggers

# metrics.jsonl's per-step similarity statistics, and the monitor's names for them.
STEP_METRICS = {"pos_sim_mean": "positive_mean", "neg_sim_mean": "negative_mean",
                "neg_sim_var": "negative_var"}
WINDOW_PREFIX = "monitor/"
EPOCH_PREFIX = "epoch/"
ALERT_TAG = "monitor/alert"


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
        self.monitor = SimilarityMonitor(n=dataset_size, log_every=config.log_every)
        self.monitor.step = steps_done
        if state is not None and "monitor" in state:
            self._restore(state["monitor"], device)
        self.loggers = Loggers([])

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

    def observe(self, z1: torch.Tensor, z2: torch.Tensor) -> dict[str, float]:
        """Feed one step's global batch (both views); log a finished window and any new
        warning; return the batch's ``pos_sim_mean``, ``neg_sim_mean`` and ``neg_sim_var``
        (NaN for a batch with a non-finite embedding)."""
        alerted = set(self.monitor.alerts)
        with warnings.catch_warnings():
            if not self.is_main:  # the same warning from every process would repeat it
                warnings.simplefilter("ignore")
            window = self.monitor.update(z1, z2)
        step = self.monitor.step
        if window is not None:
            self.loggers.log(step, {WINDOW_PREFIX + name: value for name, value in window.items()})
        for name in self.monitor.alerts.keys() - alerted:
            self.loggers.note(step, ALERT_TAG, self.monitor.alerts[name])
        batch = self.monitor.last_batch or {}
        return {key: batch.get(name, math.nan) for key, name in STEP_METRICS.items()}

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
        """What a checkpoint holds of it (``{"monitor": state}``), once everything logged so
        far is written out: a run resumed from the checkpoint then loses no logged step."""
        self.loggers.flush()
        return {"monitor": self.monitor.state_dict()}
