"""A cell's folder under a sweep's ``OUT/cells/<cell_id>/seed-<seed>/``: its ``cell.json`` (what
it computes, written before it runs) and ``result.json`` (written last and atomically: a cell is
finished iff it exists), the check that a folder holds the very cell asked for, and the
``PretrainConfig`` of a pretrain cell run there."""

from __future__ import annotations

import json
from pathlib import Path

from .recipe import Cell

#: ``smoke=True``: every cell trains one epoch at this batch size and is not evaluated.
SMOKE_BATCH = 8
RESULT = "result.json"
#: A cell folder's record of what it computes (:meth:`Cell.identity`), written before it runs.
IDENTITY = "cell.json"


def check_identity(cell: Cell, out: str | Path) -> None:
    """A cell folder that holds anything was made by this very cell (its ``cell.json`` equals
    :meth:`Cell.identity`); otherwise a ``ValueError`` says which settings differ, so old
    results are never relabelled with new settings nor resumed under them."""
    folder = cell.folder(out)
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    where = f"cell {cell.cell_id} seed {cell.seed} in {folder}"
    advice = f"use another out folder, or delete {folder} to run the cell again"
    path = folder / IDENTITY
    if not path.is_file():
        raise ValueError(f"{where} holds a run with no record of its settings ({IDENTITY}; "
                         f"an older contrastkit made it): it cannot stand for this recipe's "
                         f"cell; {advice}")
    identity = cell.identity()
    recorded = _with_later_defaults(read_json(path, advice), identity, cell.kind)
    differences = _differences(recorded, identity)
    if differences:
        raise ValueError(f"{where} was run with other settings ({'; '.join(differences)}): "
                         f"its results cannot stand for this recipe's cell; {advice}")


def _with_later_defaults(recorded: dict, identity: dict, kind: str) -> dict:
    """``recorded`` with each pretrain setting it lacks set to today's default: a setting added
    to contrastkit after the cell ran had, in that run, the behaviour its default keeps (as a
    resumed run's saved config is read); a renamed setting is read under today's name."""
    if kind != "pretrain" or not isinstance(recorded.get("settings"), dict):
        return recorded
    from contrastkit.train.config_values import translated_settings

    from . import recipe_checks

    defaults = recipe_checks.pretrain_defaults()
    settings = {**{key: defaults[key] for key in identity["settings"] if key in defaults},
                **translated_settings(recorded["settings"])}
    return {**recorded, "settings": json.loads(json.dumps(settings))}


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """``key: old -> new`` for every entry that differs between two identities (nested
    mappings by dotted key)."""
    found = []
    for name in sorted(set(old) | set(new), key=str):
        a, b = old.get(name, "(unset)"), new.get(name, "(unset)")
        if isinstance(a, dict) and isinstance(b, dict):
            found += _differences(a, b, f"{prefix}{name}.")
        elif a != b:
            found.append(f"{prefix}{name}: {a!r} -> {b!r}")
    return found


def read_json(path: Path, advice: str | None = None) -> dict:
    """The JSON mapping in ``path``; a file that is not one is a ``ValueError`` naming it and
    saying what to do (``advice``; by default: delete it, and the sweep runs that cell again,
    as for a damaged result.json)."""
    advice = advice or "delete it, and the same command runs that cell again"
    try:
        content = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON ({error}): the file is damaged; "
                         f"{advice}") from None
    if not isinstance(content, dict):
        raise ValueError(f"{path} must hold a JSON mapping: the file is damaged; {advice}")
    return content


def check_cell_files(cell: Cell, out: str | Path) -> None:
    """The JSON files of an unfinished cell's folder that resuming it reads back (a pretrain
    run's ``metrics.jsonl``, one object per line, and its half-way record
    ``convergence.json``) parse; a damaged one (cut short by a full disk, a copy that
    stopped) is a ``ValueError`` naming the file and the line, and what to do."""
    from contrastkit.train.run_folder import METRICS

    from .convergence_record import RECORD

    folder = cell.folder(out)
    advice = (f"the cell cannot continue from it: delete {folder} to run the cell again "
              f"(the sweep's other cells are kept)")
    metrics = folder / METRICS
    if metrics.is_file():
        for number, line in enumerate(_text(metrics, advice).splitlines(), 1):
            try:
                if line.strip():
                    json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{metrics} line {number} is not valid JSON ({error.msg}): "
                                 f"the file is damaged; {advice}") from None
    if (folder / RECORD).is_file():
        read_json(folder / RECORD, advice)


def _text(path: Path, advice: str) -> str:
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a text file: the file is damaged; {advice}") from None


def key(cell: Cell) -> tuple[str, int]:
    """The cell's identity in a sweep's results: its ``(cell_id, seed)``."""
    return cell.cell_id, cell.seed


def is_finished(cell: Cell, out: str | Path) -> bool:
    """Whether the cell's run under the sweep folder ``out`` has written its result.json."""
    return (cell.folder(out) / RESULT).is_file()


def read_result(cell: Cell, out: str | Path) -> dict:
    """The cell's result.json; a pretraining cell's convergence judged again by today's
    rule (:func:`~.convergence_record.judge_finished`), so a finished cell never keeps a
    verdict of an older rule."""
    result = read_json(cell.folder(out) / RESULT)
    if cell.kind != "pretrain":
        return result
    from .convergence_record import judge_finished

    return judge_finished(result, cell.folder(out))


def cell_config(cell: Cell, out: str | Path, smoke: bool = False):
    """The ``PretrainConfig`` of a pretrain cell: its settings in its run folder, with its
    seed, without progress, and not stopped by a collapse unless the recipe says so (a
    collapsed cell is a result to report, with its similarity statistics); ``smoke`` trains
    one epoch at batch ``SMOKE_BATCH``, no warm-up, in the main process (no DataLoader
    workers).
    A bad setting is a ``ValueError`` naming the cell."""
    from contrastkit.train import PretrainConfig

    folder = cell.folder(out)
    settings = {"stop_on_collapse": False, **cell.settings, "runs_dir": str(folder.parent),
                "name": folder.name, "seed": cell.seed, "progress": False}
    if smoke:
        settings.update(batch_size=SMOKE_BATCH, epochs=1, warmup_epochs=0, warmup_share=None,
                        num_workers=0)
    try:
        return PretrainConfig().with_overrides(settings)
    except ValueError as error:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe} ({cell.tier}): {error}") from None
