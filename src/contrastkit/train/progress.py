"""What training and evaluation show while they run, on standard error.

On a terminal: rich progress bars (and, for training, one summary line per epoch above the
bar). Anywhere else (CI logs, ``nohup``, a pipe), where a redrawn bar would print nothing
until the end: plain lines, each flushed as it is written: one per training epoch, and one per
evaluation stage (and one per tenth of a long stage). Standard output is left to the
commands' results.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress

#: The online probe's keys in an epoch's metrics (``online_probe=true``): its linear head's and
#: kNN's top-1 accuracies (%), and its seconds.
ONLINE_ACCURACIES = ("online_linear_top1", "online_knn_top1")
#: A text-pair run's online measure (``task=text_pairs online_probe=true``): the held-out
#: retrieval's nDCG@10.
ONLINE_RETRIEVAL = "online_ndcg10"
ONLINE_SECONDS = "online_probe_seconds"
#: The keys of an epoch's metrics that the machine measures: two identical runs differ in them.
MEASURED = ("images_per_s", "epoch_seconds", "peak_memory_mib", ONLINE_SECONDS)
# The keys of an epoch's metrics that are not loss parts (see ``train.loop``).
_NOT_LOSS_PARTS = ("epochs_completed", "lr", "loss", "pos_sim_mean", "neg_sim_mean", "neg_sim_var",
                   "collapsed_epochs", *ONLINE_ACCURACIES, ONLINE_RETRIEVAL, *MEASURED)
PLAIN_STAGE_LINES = 10  # plain lines along an evaluation stage: one per tenth done


def _stream() -> TextIO:
    """Where progress goes: standard error, looked up when used (so redirections apply)."""
    return sys.stderr


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def write_line(stream: TextIO, line: str) -> None:
    stream.write(line + "\n")
    stream.flush()


def _bar(stream: TextIO, *fields: str) -> Progress:
    """A rich ``Progress`` on ``stream`` with a description, bar, count, ``fields`` (rich text
    templates) and elapsed time."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               *(TextColumn(template) for template in fields), TimeElapsedColumn()]
    return Progress(*columns, console=Console(file=stream), transient=False)


def format_epoch(metrics: dict, epochs: int, note: str = "", unit: str = "img/s") -> str:
    """One epoch's metrics as a line: loss and, for a sum of losses, its parts, lr, the
    in-batch negative-pair similarity mean and variance, the online probe's top-1 or nDCG@10
    (when the run has one), throughput in ``unit`` (what a batch row is: ``pairs/s`` for text
    pairs) and duration; then ``note`` (e.g. that the epoch is collapsed), if any."""
    parts = [key for key in metrics if key not in _NOT_LOSS_PARTS]
    loss = f"loss {metrics['loss']:.4f}"
    if len(parts) > 1:
        loss += " (" + ", ".join(f"{part} {metrics[part]:.4f}" for part in parts) + ")"
    linear, knn = ONLINE_ACCURACIES
    online = (f"online top-1 linear {metrics[linear]:.1f} % kNN {metrics[knn]:.1f} %, "
              if linear in metrics else "")
    if ONLINE_RETRIEVAL in metrics:
        online += f"online nDCG@10 {metrics[ONLINE_RETRIEVAL]:.3f}, "
    return (f"epoch {metrics['epochs_completed']}/{epochs}: {loss}, lr {metrics['lr']:.4g}, "
            f"neg-sim mean {metrics['neg_sim_mean']:.4f} var {metrics['neg_sim_var']:.4f}, "
            f"{online}{metrics['images_per_s']:.0f} {unit}, {metrics['epoch_seconds']:.1f} s"
            + (f"; {note}" if note else ""))


class EpochReporter:
    """What the training loop reports to: ``reporter(epoch, step, steps, loss, images_per_s)``
    after every step, ``reporter.epoch_done(metrics, note)`` after every epoch (``note``: what
    the line should add, such as collapse) and ``reporter.say(line)`` for a line of its own
    (the similarity monitor's warnings). This one shows nothing (``progress=false``, or a
    process other than the main one); :attr:`shows` says so."""

    shows = False

    def __call__(self, epoch: int, step: int, steps: int, loss: float,
                 images_per_s: float) -> None:
        pass

    def epoch_done(self, metrics: dict, note: str = "") -> None:
        pass

    def say(self, line: str) -> None:
        pass


class _PlainEpochs(EpochReporter):
    """One flushed line per epoch."""

    shows = True

    def __init__(self, epochs: int, stream: TextIO, unit: str):
        self.epochs, self.stream, self.unit = epochs, stream, unit

    def epoch_done(self, metrics: dict, note: str = "") -> None:
        write_line(self.stream, format_epoch(metrics, self.epochs, note, self.unit))

    def say(self, line: str) -> None:
        write_line(self.stream, line)


class _BarEpochs(EpochReporter):
    """A rich bar over the current epoch's steps, and each finished epoch's line above it."""

    shows = True

    def __init__(self, epochs: int, progress: Progress, unit: str) -> None:
        self.epochs, self.progress, self.unit = epochs, progress, unit
        self.epoch: int | None = None
        self.task = progress.add_task("epoch", total=1, loss=float("nan"), speed=0.0)

    def __call__(self, epoch: int, step: int, steps: int, loss: float,
                 images_per_s: float) -> None:
        if self.epoch != epoch:
            self.epoch = epoch
            self.progress.reset(self.task, total=steps)
        self.progress.update(self.task, completed=step, description=f"epoch {epoch + 1}/"
                             f"{self.epochs}", loss=loss, speed=images_per_s)

    def epoch_done(self, metrics: dict, note: str = "") -> None:
        self.say(format_epoch(metrics, self.epochs, note, self.unit))

    def say(self, line: str) -> None:
        self.progress.console.print(line, markup=False, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def epoch_progress(enabled: bool, epochs: int, unit: str = "img/s") -> Iterator[EpochReporter]:
    """The training loop's :class:`EpochReporter`: silent unless ``enabled``; a rich bar when
    standard error is a terminal, otherwise one plain line per epoch; throughput in ``unit``."""
    stream = _stream()
    if not enabled:
        yield EpochReporter()
    elif not is_terminal(stream):
        yield _PlainEpochs(epochs, stream, unit)
    else:
        with _bar(stream, "loss {task.fields[loss]:.4f}",
                  "{task.fields[speed]:.0f} " + unit) as progress:
            yield _BarEpochs(epochs, progress, unit)


Advance = Callable[..., None]


class StageReporter:
    """What evaluation reports to: ``with reporter.stage(name, total) as advance:`` around each
    stage, calling ``advance(count=1, note="")`` as ``count`` more of its ``total`` units are
    done (``note``: a short status such as a loss). This one shows nothing."""

    @contextlib.contextmanager
    def stage(self, name: str, total: int) -> Iterator[Advance]:
        yield lambda count=1, note="": None


class _PlainStages(StageReporter):
    """A line when a stage ends (with its duration) and, for a stage of several units, a line
    each time another tenth of it is done (with the latest ``note``)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    @contextlib.contextmanager
    def stage(self, name: str, total: int) -> Iterator[Advance]:
        start, done, tenth = time.perf_counter(), 0, total / PLAIN_STAGE_LINES

        def advance(count: int = 1, note: str = "") -> None:
            nonlocal done
            before, done = done, done + count
            if done < total and int(done / tenth) > int(before / tenth):
                write_line(self.stream, f"{name}: {done}/{total}" + (f", {note}" if note else ""))

        yield advance
        write_line(self.stream, f"{name}: done in {time.perf_counter() - start:.1f} s")


class _BarStages(StageReporter):
    """One rich bar per stage, left on screen when it ends."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    @contextlib.contextmanager
    def stage(self, name: str, total: int) -> Iterator[Advance]:
        task = self.progress.add_task(name, total=total, note="")
        yield lambda count=1, note="": self.progress.update(task, advance=count, note=note)
        self.progress.update(task, completed=total)


@contextlib.contextmanager
def stage_progress(enabled: bool) -> Iterator[StageReporter]:
    """Evaluation's :class:`StageReporter`: silent unless ``enabled``; rich bars when standard
    error is a terminal, otherwise plain lines."""
    stream = _stream()
    if not enabled:
        yield StageReporter()
    elif not is_terminal(stream):
        yield _PlainStages(stream)
    else:
        with _bar(stream, "{task.fields[note]}") as progress:
            yield _BarStages(progress)
