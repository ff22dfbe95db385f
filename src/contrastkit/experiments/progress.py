"""What a sweep shows while it runs, on standard error: cells done / total, the cells running,
and an estimate of the time left.

As in :mod:`contrastkit.train.progress`: a rich bar on a terminal, plain flushed lines
anywhere else (CI logs, ``nohup``, a pipe), nothing when disabled. The estimate is the
recipe's own (``estimate_minutes``, scaled to the cells left) until a cell finishes, then the
sweep's measured pace: the wall time so far over the cells finished in this call, times the
cells left (so it accounts for parallel jobs, and cells skipped as already finished count for
nothing).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from contrastkit.train.progress import is_terminal, write_line

if TYPE_CHECKING:
    from rich.progress import Progress


def format_duration(seconds: float) -> str:
    """``75`` -> ``"1 min 15 s"``; ``4000`` -> ``"1 h 7 min"``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


class SweepProgress:
    """The progress of a sweep of ``total`` cells of which ``done`` were finished before it
    started; ``estimate_seconds`` is the recipe's estimate of the whole sweep. A sweep over
    several recipes (``recipes``, their number) also counts the recipes done.

    Call :meth:`started` when a cell starts, :meth:`finished` when it ends and
    :meth:`recipe_finished` when a recipe's last cell has; use it as a context manager around
    the sweep (it draws and removes the bar)."""

    def __init__(self, total: int, done: int, estimate_seconds: float, enabled: bool = True,
                 stream: TextIO | None = None, recipes: int | None = None):
        self.total, self.done, self.skipped = total, done, done
        self.recipes, self.recipes_done = recipes, 0
        self.estimate_seconds = estimate_seconds
        self.running: list[str] = []
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.start = time.perf_counter()
        self._bar: Progress | None = None

    def __enter__(self) -> SweepProgress:
        if self.enabled and self.skipped:
            self._line(f"{self.skipped} of {self.total} cells already finished: skipped")
        if self.enabled and is_terminal(self.stream):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._bar = bar = Progress(TextColumn("[bold]{task.fields[recipes]}cells"), BarColumn(),
                                 MofNCompleteColumn(),
                                 TextColumn("{task.fields[eta]}  {task.description}"),
                                 console=Console(file=self.stream), transient=False)
            bar.start()
            self._task = bar.add_task("", total=self.total, completed=self.done,
                                            eta=self.eta(), recipes=self._recipes())
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()

    def eta(self) -> str:
        """The estimated time left, as ``"ETA 3 min 5 s"`` (``~`` while it is the recipe's
        estimate)."""
        left = self.total - self.done
        ran = self.done - self.skipped
        if ran:
            return f"ETA {format_duration((time.perf_counter() - self.start) / ran * left)}"
        return f"ETA ~{format_duration(self.estimate_seconds * left / max(self.total, 1))}"

    def started(self, name: str) -> None:
        """The cell ``name`` (e.g. ``batch_size=16,vrns=0.0 seed 1``) started."""
        self.running.append(name)
        self._show(f"[{self._count()}] running {name}; {self.eta()}")

    def finished(self, name: str, seconds: float, same_run_as: str | None = None) -> None:
        """The cell ``name`` finished in ``seconds``, or took the run of its twin
        ``same_run_as`` (:mod:`.same_runs`)."""
        if name in self.running:
            self.running.remove(name)
        self.done += 1
        how = (f"took the run of {same_run_as}" if same_run_as
               else f"in {format_duration(seconds)}")
        self._show(f"[{self._count()}] finished {name} {how}; {self.eta()}")

    def recipe_finished(self) -> None:
        """Every cell of one more recipe has finished."""
        self.recipes_done += 1

    def _recipes(self) -> str:
        """``"recipes 3/19, "`` in a sweep over several recipes, else nothing."""
        return "" if self.recipes is None else f"recipes {self.recipes_done}/{self.recipes}, "

    def _count(self) -> str:
        """``"12/40"``, or ``"recipes 3/19, cells 12/40"`` over several recipes."""
        cells = f"{self.done}/{self.total}"
        return cells if self.recipes is None else f"{self._recipes()}cells {cells}"

    def _show(self, line: str) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._line(line)
            return
        current = ", ".join(self.running) or "-"
        self._bar.update(self._task, completed=self.done, eta=self.eta(),
                         recipes=self._recipes(), description=f"running {current}")

    def _line(self, line: str) -> None:
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            write_line(self.stream, line)
