"""Whether a pretraining cell converged: a run that is still improving is not evidence.

The criterion, the same for every recipe: between the epoch at half of training and the end,

- the linear-probe top-1 (the exact L-BFGS probe, :func:`contrastkit.evaluate.probe_run`) moved
  by at most :data:`ACCURACY_POINTS` points, and
- the training loss (the epoch's mean, metrics.jsonl) fell by at most :data:`LOSS_SHARE` of its
  value at half of training.

A run of another kind that trains a network (the hard-negative paper's runs) is judged by the
loss rule alone, from its epochs' mean losses (:func:`loss_converged`).

A cosine schedule slows every run down at its end, so the criterion looks at the whole second
half, where the learning rate is still at least half its peak at the start. The runner probes
the checkpoint of the half-way epoch through a callback (:class:`HalfWayProbe`, which writes
``convergence.json`` in the cell's folder), and judges the cell with :func:`converged` after the
final evaluation; the cell's ``converged`` metric is 1 or 0, and claims judged on a cell that
did not converge get the verdict "not converged".
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from contrastkit.files import write_json_atomic

#: The largest change of the linear-probe top-1 (points) over the second half of training.
ACCURACY_POINTS = 1.0
#: The largest fall of the training loss over the second half, as a share of its half-way value.
#: Contrastive losses keep falling slowly long after the representation has settled (on digits,
#: SimCLR at batch 64: 7 % over the second half of 50 epochs, 6 % of 100, 4 % of 200, while the
#: linear probe stays within half a point from 50 epochs on), so the bound says "no longer
#: learning fast", not "at the optimum"; a run of a few epochs falls 30 % or more.
LOSS_SHARE = 0.10
RECORD = "convergence.json"


def half_way(epochs: int) -> int:
    """The epoch (completed epochs) at half of a run of ``epochs``, at least 1."""
    return max(1, math.ceil(epochs / 2))


class HalfWayProbe:
    """A ``pretrain`` callback that probes the run's checkpoint at :func:`half_way` of its
    ``epochs`` and writes the probe, that epoch's training loss and the probe's seconds to
    ``convergence.json``."""

    def __init__(self, run_dir: Path, epochs: int, device: str = "auto"):
        self.run_dir, self.epoch, self.device = Path(run_dir), half_way(epochs), device

    def __call__(self, completed: int, metrics: dict) -> None:
        if completed != self.epoch:
            return
        from contrastkit.evaluate import probe_run

        start = time.perf_counter()
        probe = probe_run(self.run_dir, device=self.device)
        record = {"epoch": completed, "loss": metrics["loss"],
                  "linear_top1": probe["linear_top1"], "knn_top1": probe["knn_top1"],
                  "seconds": time.perf_counter() - start}
        write_json_atomic(self.run_dir / RECORD, record)


def converged(run_dir: Path, epochs: int, final_loss: float, final_linear_top1: float
              ) -> tuple[dict, str]:
    """The verdict on a finished run of ``epochs``: the metrics ``converged`` (1.0 or 0.0) and,
    where known, ``half_linear_top1`` and ``half_loss``; and why, in words. A run of one epoch
    has no second half to judge, and a run without its half-way record (stopped between its
    checkpoint and the probe) cannot be judged: neither counts as converged."""
    unknown = {"converged": 0.0}
    if epochs < 2:
        return unknown, "one epoch has no second half to judge"
    path = Path(run_dir) / RECORD
    if not path.is_file():
        return unknown, f"no half-way record ({RECORD})"
    half = json.loads(path.read_text())
    moved = final_linear_top1 - half["linear_top1"]
    fell = (half["loss"] - final_loss) / abs(half["loss"]) if half["loss"] else 0.0
    reasons = []
    if abs(moved) > ACCURACY_POINTS:
        reasons.append(f"linear top-1 moved {moved:+.2f} points since epoch {half['epoch']}")
    if fell > LOSS_SHARE:
        reasons.append(f"training loss fell {100 * fell:.1f} % since epoch {half['epoch']}")
    return ({"converged": 0.0 if reasons else 1.0, "half_linear_top1": half["linear_top1"],
             "half_loss": half["loss"]}, "; ".join(reasons) or "converged")


def loss_converged(epoch_losses: list[float]) -> tuple[dict, str]:
    """The loss rule alone (see the module's text) on each epoch's mean training loss: the
    metrics ``converged`` and, where known, ``half_train_loss``; and why, in words."""
    if len(epoch_losses) < 2:
        return {"converged": 0.0}, "one epoch has no second half to judge"
    epoch = half_way(len(epoch_losses))
    half, final = epoch_losses[epoch - 1], epoch_losses[-1]
    fell = (half - final) / abs(half) if half else 0.0
    words = (f"training loss fell {100 * fell:.1f} % since epoch {epoch}" if fell > LOSS_SHARE
             else "converged")
    return {"converged": 0.0 if fell > LOSS_SHARE else 1.0, "half_train_loss": half}, words
