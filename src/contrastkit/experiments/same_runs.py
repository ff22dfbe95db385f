"""Cells of one sweep that are the same run: a grid that crosses a setting with the value that
turns it off (LMCL's ``polarization_reduction`` with ``polarization = 0``) names one run
twice. The sweep runs it once; the other cell takes its twin's folder and result
(:func:`adopt`), recorded as ``same_run_as`` with no time of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from contrastkit.files import write_json_atomic

from .cell_folders import IDENTITY, RESULT, key
from .recipe import Cell

#: Files of a finished run folder that a twin does not copy: checkpoints (a finished run does
#: not resume) and the run's lock.
NOT_COPIED = ("*.pt", ".lock")


def run_key(cell: Cell) -> str:
    """What the cell's run computes: its identity (:meth:`Cell.identity`) with every pretrain
    setting that cannot change the run, given the others, at its default
    (:func:`contrastkit.train.config.without_inert`). Two cells with one key train the same
    run, bit for bit."""
    identity = cell.identity()
    if cell.kind == "pretrain":
        from contrastkit.train.config import without_inert

        identity["settings"] = without_inert(identity["settings"])
    return json.dumps(identity, sort_keys=True)


def twins(cells: list[Cell], finished: set[tuple[str, int]]) -> dict[tuple[str, int], Cell]:
    """Each cell that is the same run as an earlier one of ``cells`` (a finished one first, so
    a sweep made before this rule keeps what it ran), keyed by ``(cell_id, seed)``, mapped to
    the cell whose run it takes. A cell that finished on its own keeps its result."""
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(run_key(cell), []).append(cell)
    found = {}
    for group in groups.values():
        source = next((cell for cell in group if key(cell) in finished), group[0])
        found.update({key(cell): source for cell in group
                      if cell is not source and key(cell) not in finished})
    return found


def adopt(cell: Cell, source: Cell, out: str | Path, result: dict) -> dict:
    """Give ``cell`` the finished run of its twin ``source`` (``result``, its result.json):
    the twin's folder copied but for checkpoints, the cell's own ``cell.json``, and its
    result.json (written last, so a stop in between leaves the cell unfinished) with the
    cell's own facts, ``same_run_as`` the twin's id and ``seconds`` 0. Returns that result."""
    folder = cell.folder(out)
    shutil.copytree(source.folder(out), folder, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*NOT_COPIED, RESULT, IDENTITY))
    write_json_atomic(folder / IDENTITY, cell.identity())
    # what the run found out (its steps, epochs): the entries its result adds to its cell's
    planned = source.as_dict()
    facts = {name: value for name, value in result["cell"].items()
             if name not in planned or planned[name] != value}
    adopted = {**result, "cell": {**cell.as_dict(), **facts}, "seconds": 0.0,
               "same_run_as": source.cell_id}
    write_json_atomic(folder / RESULT, adopted)
    return adopted


def share_runs(cells: list[Cell], out: str | Path,
               results: dict[tuple[str, int], dict]) -> dict[tuple[str, int], list[Cell]]:
    """Give every cell of ``cells`` whose twin has finished (in ``results``, keyed by
    ``(cell_id, seed)``) its twin's run, adding it to ``results``; return the cells still
    waiting for their twin's run, by the twin's key (the sweep adopts them when it ends)."""
    cell_of = {key(cell): cell for cell in cells}
    waiting: dict[tuple[str, int], list[Cell]] = {}
    for twin_key, source in twins(cells, set(results)).items():
        if key(source) in results:
            results[twin_key] = adopt(cell_of[twin_key], source, out, results[key(source)])
        else:
            waiting.setdefault(key(source), []).append(cell_of[twin_key])
    return waiting
