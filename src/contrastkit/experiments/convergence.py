"""Whether a pretraining cell converged: a run that is still improving is not evidence.

The criterion, the same for every recipe: between the epoch at half of training and the end,

- the linear-probe top-1 (the exact L-BFGS probe, :func:`contrastkit.evaluate.probe_run`) moved
  by at most :data:`ACCURACY_POINTS` points, and
- the training loss (the epoch's mean, metrics.jsonl) made at most :data:`LOSS_SHARE` of its
  whole fall, from the first epoch's mean to the last's (:func:`loss_share`).

The loss rule compares the loss with itself only: it does not change when a constant is added
to the loss or the loss is scaled, so it judges alike a loss whose optimum is near zero
(InfoNCE), far below it (DCL's and DHEL's, which drop the positive pair from the denominator,
are negative), or a sum with an auxiliary term (VRNS). A rule relative to the loss's value
would not: it called a DCL run at -2.3 still falling 20 % when it made 6 % of its fall in the
second half.

A run of another kind that trains a network (the hard-negative paper's runs) is judged by the
loss rule alone, from its epochs' mean losses (:func:`loss_converged`).

A cosine schedule slows every run down at its end, so the criterion looks at the whole second
half, where the learning rate is still at least half its peak at the start. The runner probes
the checkpoint of the half-way epoch through a callback (:class:`HalfWayProbe`, which writes
``convergence.json`` in the cell's folder), and judges the cell with :func:`converged` after the
final evaluation, and again whenever a finished cell is read (:func:`judge_finished`), so every
verdict follows the criterion stated here; the cell's ``converged`` metric is 1 or 0, its
inputs (``first_loss``, ``half_loss``, ``train_loss``, ``half_linear_top1``, ``linear_top1``)
are recorded beside it, and claims judged on a cell that did not converge get the verdict
"not converged".
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from contrastkit.files import write_json_atomic

#: The largest change of the linear-probe top-1 (points) over the second half of training.
ACCURACY_POINTS = 1.0
#: The largest share of the training loss's whole fall (first epoch to last) made in the second
#: half. Contrastive losses keep falling slowly long after the representation has settled, so
#: the bound says "no longer learning fast", not "at the optimum"; a run of two epochs makes all
#: of its fall (share 1) in its second half.
LOSS_SHARE = 0.10
RECORD = "convergence.json"


def half_way(epochs: int) -> int:
    """The epoch (completed epochs) at half of a run of ``epochs``, at least 1."""
    return max(1, math.ceil(epochs / 2))


class HalfWayProbe:
    """A ``pretrain`` callback that probes the run's checkpoint at :func:`half_way` of its
    ``epochs`` and writes the probe, that epoch's training loss and the probe's seconds to
    ``convergence.json``. A run of one epoch is not probed: it has no second half to judge
    (:func:`converged`), and its half-way checkpoint is its last."""

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


def loss_share(first: float, half: float, final: float) -> float:
    """The share of the loss's fall made in the second half: ``(half - final) / (top - final)``
    with ``top = max(first, half)``; 0 when the loss did not fall in the second half (it
    rose, or stayed)."""
    fell = half - final
    return fell / (max(first, half) - final) if fell > 0 else 0.0


def judge(first_loss: float, half: dict, final_loss: float,
          final_linear_top1: float | None = None) -> tuple[dict, str]:
    """The verdict on a finished run from its first epoch's loss, its half-way
    record ``half`` (``loss`` and, for a probed run, ``linear_top1``) and its final
    loss and probe: the metrics ``converged`` (1.0 or 0.0), ``first_loss``, ``half_loss`` and
    ``half_linear_top1`` (where probed); and why, in words."""
    reasons = []
    if final_linear_top1 is not None:
        moved = final_linear_top1 - half["linear_top1"]
        if abs(moved) > ACCURACY_POINTS:
            reasons.append(f"linear top-1 moved {moved:+.2f} points in the second half")
    share = loss_share(first_loss, half["loss"], final_loss)
    if share > LOSS_SHARE:
        reasons.append(f"training loss made {100 * share:.1f} % of its fall in the second half")
    metrics = {"converged": 0.0 if reasons else 1.0, "first_loss": first_loss,
               "half_loss": half["loss"]}
    if final_linear_top1 is not None:
        metrics["half_linear_top1"] = half["linear_top1"]
    return metrics, "; ".join(reasons) or "converged"


def converged(run_dir: Path, epochs: int, final_loss: float,
              final_linear_top1: float | None) -> tuple[dict, str]:
    """The verdict (:func:`judge`) on a finished pretraining run of ``epochs`` in ``run_dir``,
    from its half-way record and its first epoch's loss (``metrics.jsonl``); without a final
    probe (``final_linear_top1`` None: a run on captions without labels), by the loss alone.
    A run of one epoch has no second half to judge, and a run without its half-way record
    (stopped between its checkpoint and the probe) cannot be judged: neither counts as
    converged."""
    from contrastkit.train.run_folder import METRICS

    unknown = {"converged": 0.0}
    if epochs < 2:
        return unknown, "one epoch has no second half to judge"
    path = Path(run_dir) / RECORD
    if not path.is_file():
        return unknown, f"no half-way record ({RECORD})"
    first = _first_epoch_loss(Path(run_dir) / METRICS)
    if first is None:
        return unknown, f"no first epoch in {METRICS}"
    return judge(first, json.loads(path.read_text()), final_loss, final_linear_top1)


def _first_epoch_loss(metrics: Path) -> float | None:
    """The mean training loss of the first epoch in a run's ``metrics.jsonl`` (a damaged file
    is :func:`~contrastkit.train.plots.read_metrics`'s ``ValueError``)."""
    from contrastkit.train.plots import read_metrics

    for record in read_metrics(metrics):
        if record.get("epochs_completed") == 1 and "loss" in record:
            return record["loss"]
    return None


def judge_finished(result: dict, run_dir: Path) -> dict:
    """A finished pretraining cell's ``result`` (its result.json) judged again by today's
    criterion from the files of its folder ``run_dir``: the same result with ``converged`` and
    its inputs, and the words in ``cell.convergence``, replaced. A result that records no
    epochs or training loss (an older contrastkit's) is returned as it is."""
    metrics, cell = result["metrics"], result["cell"]
    if "epochs" not in cell or "train_loss" not in metrics:  # not a finished pretraining run
        return result
    verdict, words = converged(run_dir, cell["epochs"], metrics["train_loss"],
                               metrics.get("linear_top1"))
    kept = {name: value for name, value in metrics.items() if name not in JUDGED}
    return {**result, "metrics": {**kept, **verdict}, "cell": {**cell, "convergence": words}}


#: The metrics a verdict writes (:func:`judge`), replaced when a cell is judged again.
JUDGED = ("converged", "first_loss", "half_loss", "half_linear_top1")
#: What a verdict is computed from: a pretraining run's, then a run judged by its losses alone
#: (:func:`loss_converged`). A tidy row records them beside ``converged`` wherever a cell has
#: them, so that every verdict can be recomputed from the rows alone (:func:`judge_metrics`).
PRETRAIN_INPUTS = ("first_loss", "half_loss", "train_loss", "half_linear_top1", "linear_top1")
LOSS_INPUTS = ("first_train_loss", "half_train_loss", "train_loss")
INPUTS = tuple(dict.fromkeys(PRETRAIN_INPUTS + LOSS_INPUTS))


def judge_metrics(metrics: dict) -> float | None:
    """``converged`` (1.0 or 0.0) recomputed from a cell's recorded :data:`INPUTS`
    (``metrics``: name -> value), by the criterion stated in the module's text; ``None`` when
    they are not all recorded (a run that could not be judged)."""
    if all(name in metrics for name in PRETRAIN_INPUTS):
        half = {"loss": metrics["half_loss"], "linear_top1": metrics["half_linear_top1"]}
        verdict, _ = judge(metrics["first_loss"], half, metrics["train_loss"],
                           metrics["linear_top1"])
    elif all(name in metrics for name in LOSS_INPUTS):
        verdict, _ = judge(metrics["first_train_loss"], {"loss": metrics["half_train_loss"]},
                           metrics["train_loss"])
    else:
        return None
    return verdict["converged"]


def loss_converged(epoch_losses: list[float]) -> tuple[dict, str]:
    """The loss rule alone (see the module's text) on each epoch's mean training loss: the
    metrics ``converged`` and, where known, ``first_train_loss`` and ``half_train_loss``; and
    why, in words."""
    if len(epoch_losses) < 2:
        return {"converged": 0.0}, "one epoch has no second half to judge"
    half = {"loss": epoch_losses[half_way(len(epoch_losses)) - 1]}
    verdict, words = judge(epoch_losses[0], half, epoch_losses[-1])
    return {"converged": verdict["converged"], "first_train_loss": epoch_losses[0],
            "half_train_loss": half["loss"]}, words
