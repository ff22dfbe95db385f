"""Where a training run's numbers go besides ``metrics.jsonl``: CSV, TensorBoard, W&B.

The ``logger`` setting names none, one or several of :data:`LOGGERS`, comma-separated
(``logger=csv,tensorboard``; ``logger=none`` for none). Each logger receives, at a global
step, a dict of numbers (:meth:`Loggers.log`) and, rarely, a message (:meth:`Loggers.note`):

- ``csv``: ``log.csv`` in the run folder, one row per call: ``step`` and one column per name
  (a cell is empty where the row has no value of that name);
- ``tensorboard``: event files under ``tensorboard/`` in the run folder, through
  ``torch.utils.tensorboard.SummaryWriter`` (needs the ``tensorboard`` package);
- ``wandb``: a Weights & Biases run named after the run, its id kept in ``wandb-run-id`` so a
  resumed run continues it (needs the ``wandb`` package).

A run resumed from a checkpoint taken at global step ``g`` keeps what was logged up to ``g``
and drops the rest, which it logs again: ``log.csv`` is truncated, TensorBoard purges the
later steps (``purge_step``), and W&B ignores steps it already holds. A new run starts afresh
(:func:`clear_logs`).
"""

from __future__ import annotations

import csv
import importlib
import io
import uuid
from pathlib import Path

from contrastkit.files import run_folder_io, write_text_atomic

LOGGERS = ("csv", "tensorboard", "wandb")
NONE = "none"
CSV_FILE = "log.csv"
TENSORBOARD_DIR = "tensorboard"
TENSORBOARD_EVENTS = "events.out.tfevents.*"
WANDB_ID_FILE = "wandb-run-id"
# The module each logger imports, and how to install it.
_REQUIREMENTS = {
    "tensorboard": ("torch.utils.tensorboard",
                    "pip install tensorboard (or pip install 'contrastkit[train]')"),
    "wandb": ("wandb", "pip install wandb (or pip install 'contrastkit[wandb]')"),
}


def logger_names(setting: str) -> tuple[str, ...]:
    """The loggers that the ``logger`` setting names: ``"csv,tensorboard"`` ->
    ``("csv", "tensorboard")``; ``"none"`` or ``""`` -> ``()``."""
    if setting.strip() in ("", NONE):
        return ()
    names = tuple(name.strip() for name in setting.split(","))
    if any(name not in LOGGERS for name in names) or len(set(names)) < len(names):
        raise ValueError(f"logger must be {NONE} or distinct names among {', '.join(LOGGERS)} "
                         f"separated by commas (e.g. logger=csv,tensorboard), got {setting!r}")
    return names


def require_loggers(setting: str) -> None:
    """Raise a ``ValueError`` with the pip command if a logger that ``setting`` names needs a
    package that is not installed."""
    for name in logger_names(setting):
        if name in _REQUIREMENTS:
            module, command = _REQUIREMENTS[name]
            try:
                importlib.import_module(module)
            except ImportError:
                raise ValueError(f"logger={name} needs a package that is not installed: "
                                 f"{command}") from None


def clear_logs(run_dir: Path) -> None:
    """Remove what the loggers wrote in ``run_dir`` for an earlier run (``log.csv``, the
    TensorBoard event files, the W&B run id), before a new run starts there."""
    paths = [run_dir / CSV_FILE, run_dir / WANDB_ID_FILE,
             *(run_dir / TENSORBOARD_DIR).glob(TENSORBOARD_EVENTS)]
    for path in paths:
        with run_folder_io("remove", path):
            path.unlink(missing_ok=True)


class CsvLogger:
    """``log.csv``: a row per call, ``step`` then a column per name, in order of appearance.
    A row is appended (and flushed) as it is logged; a new name rewrites the file with the
    wider header. Resumed at step ``g``, the rows of later steps are dropped."""

    def __init__(self, run_dir: Path, resume_step: int) -> None:
        self.path = run_dir / CSV_FILE
        self.columns, self.rows = ["step"], []
        if resume_step and self.path.is_file():
            with run_folder_io("read", self.path), open(self.path, newline="") as handle:
                reader = csv.DictReader(handle)
                self.columns = list(reader.fieldnames or self.columns)
                self.rows = [row for row in reader if int(row["step"]) <= resume_step]
        self._rewrite()

    def log(self, step: int, values: dict[str, object]) -> None:
        row = {"step": step, **values}
        self.rows.append(row)
        new = [name for name in row if name not in self.columns]
        if new:
            self.columns += new
            self._rewrite()
            return
        with run_folder_io("write", self.path), open(self.path, "a", newline="") as handle:
            handle.write(self._lines([row], header=False))

    def note(self, step: int, tag: str, text: str) -> None:
        self.log(step, {tag: text})

    def flush(self) -> None:
        """Nothing to do: each row is written as it is logged."""

    def close(self, failed: bool) -> None:
        """Nothing to do: the file is closed after each row."""

    def _rewrite(self) -> None:
        write_text_atomic(self.path, self._lines(self.rows, header=True))

    def _lines(self, rows: list[dict], header: bool) -> str:
        text = io.StringIO()
        writer = csv.DictWriter(text, self.columns, lineterminator="\n")
        if header:
            writer.writeheader()
        writer.writerows(rows)
        return text.getvalue()


class TensorBoardLogger:
    """Scalars and texts under ``tensorboard/`` (``tensorboard --logdir runs``); resumed at
    step ``g``, TensorBoard discards what the earlier files hold after ``g``."""

    def __init__(self, run_dir: Path, resume_step: int) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(run_dir / TENSORBOARD_DIR),
                                    purge_step=resume_step + 1 if resume_step else None)

    def log(self, step: int, values: dict[str, float]) -> None:
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)

    def note(self, step: int, tag: str, text: str) -> None:
        self.writer.add_text(tag, text, step)

    def flush(self) -> None:
        self.writer.flush()

    def close(self, failed: bool) -> None:
        self.writer.close()


class WandbLogger:
    """A W&B run (``wandb.init``) named after the run, with the config; a resumed run continues
    the W&B run whose id ``wandb-run-id`` holds (W&B ignores the steps it already has). W&B's
    own settings apply (``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_MODE=offline``, ...)."""

    def __init__(self, run_dir: Path, resume_step: int, name: str, config: dict) -> None:
        import wandb

        id_file = run_dir / WANDB_ID_FILE
        if resume_step and id_file.is_file():
            run_id = id_file.read_text().strip()
        else:
            run_id = uuid.uuid4().hex[:16]
            write_text_atomic(id_file, run_id + "\n")
        self.run = wandb.init(id=run_id, resume="allow", name=name, dir=str(run_dir),
                              config=config)

    def log(self, step: int, values: dict[str, float]) -> None:
        self.run.log(values, step=step)

    def note(self, step: int, tag: str, text: str) -> None:
        self.run.alert(title=tag, text=text)

    def flush(self) -> None:
        """Nothing to do: W&B writes in its own process."""

    def close(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)


class Loggers:
    """The loggers of a run as one: each call goes to every one of them."""

    def __init__(self, loggers: list) -> None:
        self.loggers = loggers

    def log(self, step: int, values: dict[str, float]) -> None:
        for logger in self.loggers:
            logger.log(step, values)

    def note(self, step: int, tag: str, text: str) -> None:
        for logger in self.loggers:
            logger.note(step, tag, text)

    def flush(self) -> None:
        for logger in self.loggers:
            logger.flush()

    def close(self, failed: bool = False) -> None:
        """Close every logger, even if closing one of them fails (that error is raised
        after)."""
        loggers, self.loggers = self.loggers, []
        errors = []
        for logger in loggers:
            try:
                logger.close(failed)
            except Exception as error:  # close the others first
                errors.append(error)
        if errors:
            raise errors[0]


def open_loggers(setting: str, run_dir: Path, resume_step: int, name: str,
                 config: dict) -> Loggers:
    """The loggers that ``setting`` names, writing into ``run_dir`` from global step
    ``resume_step + 1`` on (0: a new run); those opened are closed again if one fails."""
    opened = Loggers([])
    try:
        for logger in logger_names(setting):
            if logger == "csv":
                opened.loggers.append(CsvLogger(run_dir, resume_step))
            elif logger == "tensorboard":
                opened.loggers.append(TensorBoardLogger(run_dir, resume_step))
            else:
                opened.loggers.append(WandbLogger(run_dir, resume_step, name, config))
    except BaseException:
        opened.close(failed=True)
        raise
    return opened
