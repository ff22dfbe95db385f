"""A sweep's folder (``reproduce --out``) is recognisably the sweep's: :data:`MARKER`, written
when the sweep starts, names its recipe and tier. A sweep writes only its own files there
(:data:`SWEEP_FILES` and the report's figures) and deletes nothing, so it is never let into a
folder that holds something else unless the caller says so (``overwrite``): a user's own
``report.md`` or ``results.csv`` is not replaced without a word."""

from __future__ import annotations

import json
from pathlib import Path

from contrastkit.files import run_folder_io, write_text_atomic

from .cell_folders import read_json
from .evidence import CELLS, REPORT_MD, RESULTS_CSV, RUN_JSON, SUMMARY_CSV

#: The marker of a sweep folder: ``{"format": 1, "recipe": ..., "tier": ...}``.
MARKER = ".contrastkit-sweep.json"
#: What a sweep writes in its folder besides the report's figures (``*.png``).
SWEEP_FILES = (MARKER, RESULTS_CSV, RUN_JSON, SUMMARY_CSV, REPORT_MD, CELLS, "submitit")


class NotASweepFolder(ValueError):
    """The folder meant for a sweep holds files no sweep wrote (``entries``, a few of them by
    name). :meth:`advice` words the error for the caller: the Python API's argument
    (``overwrite=True``) or the command line's option (``--overwrite``)."""

    def __init__(self, folder: Path, entries: list[str]):
        self.folder, self.entries = folder, entries
        super().__init__(self.advice("out", "overwrite=True"))

    def advice(self, setting: str, overwrite: str) -> str:
        shown = ", ".join(self.entries[:4]) + (", ..." if len(self.entries) > 4 else "")
        return (f"{setting} {self.folder} holds {shown}, which no sweep wrote: a sweep there "
                f"would replace its {RESULTS_CSV}, {RUN_JSON}, {SUMMARY_CSV} and {REPORT_MD}; "
                f"choose another {setting}, or pass {overwrite} to write the sweep's files "
                f"into it anyway (nothing else there is touched)")


def check_sweep_folder(folder: str | Path, recipe: str, tier: str,
                       overwrite: bool = False) -> None:
    """Whether the sweep of ``recipe``'s ``tier`` may write into ``folder``: yes when it is
    absent or empty, when its :data:`MARKER` names this recipe and tier, or when it is the
    folder of a sweep started before the marker existed (a ``run.json`` or a cell's
    ``cell.json``); a folder that is a file, or the marked folder of another recipe or tier,
    is a ``ValueError``; any other folder is a :class:`NotASweepFolder` unless ``overwrite``.
    Nothing is written."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"out {folder} is a file; expected a folder")
    if not folder.is_dir():
        return
    marker = folder / MARKER
    if marker.is_file():
        mark = read_json(marker, "it marks its folder as a sweep's; delete it if the folder is "
                                 "not one")
        if (mark.get("recipe"), mark.get("tier")) != (recipe, tier) and not overwrite:
            raise ValueError(f"out {folder} holds the sweep of recipe {mark.get('recipe')} "
                             f"(tier {mark.get('tier')}), not of {recipe} ({tier}): choose "
                             f"another folder for this sweep")
        return
    if _earlier_sweep(folder) or overwrite:
        return
    entries = sorted(path.name + ("/" if path.is_dir() else "") for path in folder.iterdir())
    if entries:
        raise NotASweepFolder(folder, entries)


def mark_sweep_folder(folder: str | Path, recipe: str, tier: str) -> Path:
    """Create ``folder`` if need be and write its :data:`MARKER` (atomically); the marker's
    path."""
    folder = Path(folder)
    with run_folder_io("create", folder):
        folder.mkdir(parents=True, exist_ok=True)
    path = folder / MARKER
    write_text_atomic(path, json.dumps({"format": 1, "recipe": recipe, "tier": tier}) + "\n")
    return path


def _earlier_sweep(folder: Path) -> bool:
    """Whether ``folder`` is the folder of a sweep run before :data:`MARKER` existed: it holds
    a run record, or a cell folder with its record of settings."""
    from .cell_folders import IDENTITY

    record = folder / RUN_JSON
    if record.is_file():
        try:
            content = json.loads(record.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            content = None
        if isinstance(content, dict) and {"recipe", "tier", "recipe_content"} <= set(content):
            return True
    cells = folder / CELLS
    return cells.is_dir() and next(cells.glob(f"*/seed-*/{IDENTITY}"), None) is not None
