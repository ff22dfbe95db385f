"""The run folder ``runs/<name>/``: what a run writes there, its lock, and clear errors when it
cannot be written.

A run writes ``config.yaml`` (the resolved config), ``metrics.jsonl`` (one JSON line per epoch),
the checkpoints (:mod:`.checkpoint`) and ``curves.png``; ``contrastkit evaluate`` adds
``eval.json``. Every text file is written through a temporary file and renamed, so a full disk
leaves the old content; the folder is locked for the duration of a run.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from contrastkit.files import RunFolderError, run_folder_io, write_text_atomic

from .checkpoint import CHECKPOINT_FILES, Advice, has_checkpoint
from .config import DEFAULT_BASE_LR, EXECUTION_SETTINGS, PretrainConfig, typed_settings
from .config_files import parse_overrides, read_config_file
from .config_values import translated_settings
from .loggers import TENSORBOARD_DIR, clear_logs
from .plots import read_metrics

METRICS = "metrics.jsonl"
CONFIG = "config.yaml"
CURVES = "curves.png"
PHASE = "phase.png"  # a run that learns SigLIP's scale and bias: its (t, b) on the phase diagram
LOCK = ".lock"
EMBEDDINGS = "embeddings-{split}.npz"  # what `contrastkit embed` writes by default
# What a run, `contrastkit evaluate` (eval.json) and `contrastkit embed` write; --overwrite
# removes these and only these, so a user's own files in the run folder survive.
RUN_FILES = (CONFIG, METRICS, *CHECKPOINT_FILES, CURVES, PHASE, "eval.json",
             *(EMBEDDINGS.format(split=split) for split in ("train", "test")))


class RunFolderInUse(RunFolderError):
    """The run folder ``run_dir`` is locked by another run, process ``holder``. The message
    advises another run folder in the caller's words (``rename``: ``name=`` for pretrain, a
    sweep's ``out``); :meth:`advice` words it for another caller."""

    def __init__(self, run_dir: Path, holder: str, rename: str = "name="):
        self.run_dir, self.holder, self.rename = Path(run_dir), holder, rename
        super().__init__(self.advice(rename))

    def advice(self, rename: str) -> str:
        return (f"run folder {self.run_dir} is in use by another run (process {self.holder}); "
                f"wait for it to finish, or choose another {rename}")

    def __reduce__(self):  # raised in a sweep's worker process, re-raised in the parent
        return type(self), (self.run_dir, self.holder, self.rename)


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the run folder (``run_dir/.lock``, creating the folder) for
    the duration of the block; raise :class:`RunFolderInUse` naming the process that holds
    it. The lock is the kernel's (``flock``): a killed process releases it, so a stale lock
    file never blocks a run. Without ``fcntl`` (Windows) nothing is locked."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    run_dir = Path(run_dir)
    path = run_dir / LOCK
    with run_folder_io("create the run folder (runs_dir/name)", run_dir):
        run_dir.mkdir(parents=True, exist_ok=True)
    with run_folder_io("write in the run folder", run_dir):
        handle = open(path, "a+")
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise RunFolderInUse(run_dir, handle.read().strip() or "unknown") from None
        with run_folder_io("write", path):
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        yield


def start_run_dir(config: PretrainConfig, overwrite: bool, is_main: bool) -> None:
    """Make the (locked) run folder ready for a new run: refuse one that holds a checkpoint
    (:func:`~.checkpoint.has_checkpoint`) unless ``overwrite``, then remove the old run's files
    (``RUN_FILES``) and write config.yaml."""
    run_dir = config.run_dir
    if not overwrite and has_checkpoint(run_dir):
        raise Advice(f"run folder {run_dir} already holds a run; pass <resume> to continue it, "
                     f"<overwrite> to start it again, or choose another name")
    if is_main:
        for name in RUN_FILES:
            with run_folder_io("remove", run_dir / name):
                (run_dir / name).unlink(missing_ok=True)
        write_text_atomic(run_dir / CONFIG, config.to_yaml())


def check_same_config(config: PretrainConfig, saved: Path) -> int:
    """Check that ``config`` is the saved one but for the settings that do not change what
    is computed, and ``epochs``, which may only grow; return the saved ``epochs``."""
    # A setting that the saved config lacks was added to contrastkit after the run was
    # made: the run had its default, which keeps the behaviour of before.
    before = _effective({**type(config)().to_dict(), **read_saved_config(saved)})
    _refuse_changes(before, _effective(config.to_dict()), saved)
    if config.epochs < before["epochs"]:
        raise ValueError(f"epochs can only grow when resuming: the run has epochs="
                         f"{before['epochs']}, got {config.epochs}")
    return before["epochs"]


def _refuse_changes(before: dict, now: dict, saved: Path) -> None:
    """A ``ValueError`` listing the settings that differ between ``before`` (the run's, saved
    in ``saved``) and ``now``, but for those that do not change what is computed, and
    ``epochs``."""
    # These change how a run executes, not what it computes; epochs is checked apart.
    free = {*EXECUTION_SETTINGS, "epochs"}
    differ = sorted(k for k in now if k not in free and before.get(k) != now[k])
    if differ:
        listed = ", ".join(f"{k}: {before.get(k)!r} -> {now[k]!r}" for k in differ)
        raise ValueError(f"cannot resume with a different config ({listed}); resume with the "
                         f"saved config {saved}")


def check_same_data(state: dict, train_size: int, config: PretrainConfig) -> None:
    """Refuse (an :class:`Advice`) to resume from the checkpoint ``state`` on a training set of
    ``train_size`` images when the run was trained on another number (the checkpoint's
    ``train_size``; one written before contrastkit recorded it is not checked): the size sets
    the steps of an epoch, so the learning-rate schedule and every epoch's batches, and a run
    continued on it would silently follow a wrong schedule. ``data_dir`` may change (the same
    data, moved) as long as the size does not."""
    trained_on = state.get("train_size")
    if trained_on is None or trained_on == train_size:
        return
    was = state.get("config", {}).get("data_dir", config.data_dir)
    moved = was != config.data_dir
    now = (f"data_dir={config.data_dir} holds {train_size}" if moved else
           f"it holds {train_size} now")
    back = f"resume with data_dir={was}" if moved else "restore the run's data"
    raise Advice(f"cannot resume on other data: the run was trained on {trained_on} images "
                 f"(dataset={config.dataset}, data_dir={was}) and {now}, which would change "
                 f"its learning-rate schedule and batches; {back}, or start the run again with "
                 f"<overwrite>")


def read_saved_config(saved: Path) -> dict:
    """The settings in a run's config.yaml ``saved``: a ``ValueError`` naming the file when it
    is empty or not a mapping of key: value (the run's config cannot be known)."""
    from contrastkit.yaml_files import read_yaml

    content = read_yaml(saved, f"the run's config file {saved}")
    if isinstance(content, dict) and content:
        return translated_settings(content)
    what = ("is empty" if content in (None, {}) else
            f"is a YAML {type(content).__name__}, not a mapping of key: value")
    raise Advice(f"the run's config file {saved} {what}, so the run cannot be resumed; "
                 f"restore the file (it is what the run was started with), or start the run "
                 f"again with <overwrite>")


def resumed_config(path: str | Path | None = None, overrides: Sequence[str] = ()
                   ) -> PretrainConfig:
    """The config that ``contrastkit pretrain --resume`` continues a run with: the run's saved
    config.yaml, changed only by the settings given (the YAML file at ``path``, then the
    ``key=value`` ``overrides``); a default is never a request. The run is found at
    ``runs_dir/name`` of the given settings (their defaults if not given). Without a saved
    config, the given settings alone (:func:`~.config_files.load_config`), which the resume then
    refuses. A setting given that would change what the run computes is refused here, in its
    own words, before the config is built (where another check could fail first and name a
    saved setting the user never typed)."""
    given = translated_settings({**(read_config_file(path) if path is not None else {}),
                                 **parse_overrides(list(overrides))})
    defaults = PretrainConfig()
    where = {"runs_dir": str(given.get("runs_dir", defaults.runs_dir)),
             "name": str(given.get("name", defaults.name))}
    saved = Path(where["runs_dir"]) / where["name"] / CONFIG
    if not saved.is_file():
        return defaults.with_overrides(given)
    settings = read_saved_config(saved)
    before = _effective({**defaults.to_dict(), **settings})
    _refuse_changes(before, _effective({**before, **typed_settings(given)}), saved)
    return defaults.with_overrides({**settings, **where, **given})


def _effective(settings: dict) -> dict:
    """``settings`` with an unset ``base_lr`` replaced by the optimizer's default, so that a
    run saved with the number (or before ``base_lr`` could be unset) resumes with ``None``."""
    if settings.get("base_lr") is None:
        settings = {**settings, "base_lr": DEFAULT_BASE_LR[settings["optimizer"]]}
    return settings


def truncate_metrics(path: Path, epochs_completed: int) -> None:
    """Drop the metric lines of epochs that a resumed run will redo."""
    kept = [m for m in read_metrics(path) if m["epochs_completed"] <= epochs_completed]
    write_text_atomic(path, "".join(json.dumps(m) + "\n" for m in kept))


def append_metrics(path: Path, metrics: dict) -> None:
    """Add ``metrics`` as a line of ``path``, atomically (a full disk leaves the old lines)."""
    before = path.read_text() if path.is_file() else ""
    write_text_atomic(path, before + json.dumps(metrics) + "\n")


def remove_unsaved_run(run_dir: Path) -> None:
    """After a new run failed before its first checkpoint (non-finite data, divergence, an
    error of the user's code), remove what it wrote (config.yaml, metrics.jsonl, the logs, the
    lock) and the folder when nothing else is left in it: no run folder stays behind without
    a checkpoint. A folder with a checkpoint is left as it is. Best effort: what cannot be
    removed stays."""
    if has_checkpoint(run_dir):
        return
    with contextlib.suppress(OSError):
        clear_logs(run_dir)
    for path in [*(run_dir / name for name in RUN_FILES), run_dir / TENSORBOARD_DIR,
                 run_dir / LOCK, run_dir]:
        with contextlib.suppress(OSError):  # a folder that is not empty stays
            path.rmdir() if path.is_dir() else path.unlink(missing_ok=True)
