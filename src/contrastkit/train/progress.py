"""The per-epoch progress bar (rich): steps, loss and throughput."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def epoch_progress(enabled: bool, epochs: int):
    """Yields ``update(epoch, step, steps, loss, images_per_s)``; draws a rich progress bar
    when ``enabled``, otherwise does nothing."""
    if not enabled:
        yield lambda *args: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("loss {task.fields[loss]:.4f}"),
               TextColumn("{task.fields[speed]:.0f} img/s"), TimeElapsedColumn()]
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task("epoch", total=1, loss=float("nan"), speed=0.0)
        current = {"epoch": None}

        def update(epoch, step, steps, loss, images_per_s):
            if current["epoch"] != epoch:
                current["epoch"] = epoch
                progress.reset(task, total=steps)
            progress.update(task, completed=step, description=f"epoch {epoch + 1}/{epochs}",
                            loss=loss, speed=images_per_s)

        yield update
