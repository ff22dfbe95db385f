"""A pretraining run's convergence, judged from its folder by the rule of :mod:`.convergence`.

The runner probes the checkpoint of the half-way epoch through a callback
(:class:`HalfWayProbe`, which writes ``convergence.json`` in the cell's folder), and judges the
cell with :func:`converged` after the final evaluation, from that record and the per-epoch
curves of ``metrics.jsonl`` (the epoch's mean loss and in-batch similarities); and again
whenever a finished cell is read (:func:`judge_finished`), so every verdict follows the rule of
today. A cosine schedule slows every run down at its end, so the rule looks at the whole second
half, where the learning rate is still at least half its peak.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from contrastkit.files import write_json_atomic

from .convergence import (
    CONVERGENCE_RULE_VERSION,
    PRETRAIN_CURVES,
    RULE,
    UNFITTED,
    epoch_curves,
    half_way,
    judge_curves,
)

RECORD = "convergence.json"
#: The metrics a verdict writes, replaced when a cell is judged again (an earlier rule's too).
JUDGED = ("converged", RULE, UNFITTED, "first_loss", "half_loss", "half_linear_top1")


class HalfWayProbe:
    """A ``pretrain`` callback that probes the run's checkpoint at :func:`half_way` of its
    ``epochs`` and writes the probe, that epoch's training loss and the probe's seconds to
    ``convergence.json``. A run of one epoch is not probed: it has no second half to judge,
    and its half-way checkpoint is its last."""

    def __init__(self, run_dir: Path, epochs: int, device: str = "auto"):
        self.run_dir, self.device = Path(run_dir), device
        self.epoch = half_way(epochs) if epochs >= 2 else None

    def __call__(self, completed: int, metrics: dict) -> None:
        if completed == self.epoch:
            self._probe(metrics["loss"])

    def catch_up(self) -> None:
        """Before a run resumes: probe now if it was stopped during its half-way probe (its
        metrics and checkpoint end at the half-way epoch, without the record), which the
        resumed run, starting after that epoch, would never do."""
        from contrastkit.train.plots import read_metrics
        from contrastkit.train.run_folder import METRICS

        if self.epoch is None or (self.run_dir / RECORD).exists():
            return
        epochs = read_metrics(self.run_dir / METRICS)
        if epochs and epochs[-1].get("epochs_completed") == self.epoch:
            self._probe(epochs[-1]["loss"], only_at_epoch=True)

    def _probe(self, loss: float, only_at_epoch: bool = False) -> None:
        """Probe the last checkpoint and write the record (``only_at_epoch``: unless that
        checkpoint is not the half-way epoch's)."""
        from contrastkit.evaluate import probe_run

        start = time.perf_counter()
        probe = probe_run(self.run_dir, device=self.device)
        if only_at_epoch and probe["epochs_completed"] != self.epoch:
            return
        record = {"epoch": self.epoch, "loss": loss, "linear_top1": probe["linear_top1"],
                  "knn_top1": probe["knn_top1"], "seconds": time.perf_counter() - start}
        write_json_atomic(self.run_dir / RECORD, record)


def converged(run_dir: Path, epochs: int, final_linear_top1: float | None
              ) -> tuple[dict, str]:
    """The verdict (:func:`.convergence.judge_curves`) on a finished pretraining run of
    ``epochs`` in ``run_dir``: its curves from ``metrics.jsonl`` and its probe at half-way
    (``convergence.json``) and at the end (``final_linear_top1``; None for a run on captions
    without labels, judged by its curves alone). A run of one epoch has no second half to
    judge, and a probed run without its half-way record (stopped between its checkpoint and
    the probe) cannot be judged: neither counts as converged."""
    from contrastkit.train.plots import read_metrics
    from contrastkit.train.run_folder import METRICS

    unknown = {"converged": 0.0, RULE: float(CONVERGENCE_RULE_VERSION)}
    if epochs < 2:
        return unknown, "one epoch has no second half to judge"
    path = Path(run_dir) / RECORD
    probe = None
    if final_linear_top1 is not None:
        if not path.is_file():
            return unknown, f"no half-way record ({RECORD})"
        probe = (json.loads(path.read_text())["linear_top1"], final_linear_top1)
    records = read_metrics(Path(run_dir) / METRICS)
    return judge_curves(epoch_curves(records, PRETRAIN_CURVES, "epochs_completed"), probe)


def judge_finished(result: dict, run_dir: Path) -> dict:
    """A finished pretraining cell's ``result`` (its result.json) judged again by today's rule
    from the files of its folder ``run_dir``: the same result with ``converged`` and its
    inputs, and the words in ``cell.convergence``, replaced. A result that records no epochs
    or training loss (an older contrastkit's) is returned as it is."""
    metrics, cell = result["metrics"], result["cell"]
    if "epochs" not in cell or "train_loss" not in metrics:  # not a finished pretraining run
        return result
    verdict, words = converged(run_dir, cell["epochs"], metrics.get("linear_top1"))
    kept = {name: value for name, value in metrics.items()
            if name not in JUDGED and not name.startswith("drift_")}
    return {**result, "metrics": {**kept, **verdict}, "cell": {**cell, "convergence": words}}
