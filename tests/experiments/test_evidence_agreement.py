"""Evidence that disagrees with itself is refused: ``--regenerate`` (and ``--publish``) check
that the run record (run.json) and the rows of results.csv describe the same sweep (recipe,
tier, format, cells of the snapshot's grid, seeds) and name the first mismatch in one line,
writing nothing."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.experiments.evidence import RUN_JSON
from contrastkit.experiments.reproduce import publish, regenerate, reproduce
from tests.experiments.tiny_recipes import SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of

#: 4 cells (loss x temperature) x 2 seeds of a short simulation, with a quick and a cpu tier.
RECIPE = content_of(
    SIMULATE, grid={"loss": ["simclr", "dcl"], "temperature": [0.5, 1.0]},
    base={**SIMULATE["base"], "steps": 20},
    tiers={"quick": {"seeds": 2, "estimate_minutes": 0.1},
           "cpu": {"seeds": 3, "estimate_minutes": 0.2}})


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """A finished quick sweep of :data:`RECIPE`, run once for the module."""
    folder = tmp_path_factory.mktemp("sweep")
    reproduce(write_recipe(folder, RECIPE), out=folder / "out", progress=False)
    return folder / "out"


@pytest.fixture
def copy(sweep, tmp_path) -> Path:
    """A copy of the sweep's evidence (its cells left out) for one test to change."""
    folder = tmp_path / "copy"
    shutil.copytree(sweep, folder, ignore=shutil.ignore_patterns("cells", ".*"))
    return folder


def _edit_record(folder: Path, **changes) -> None:
    record = json.loads((folder / RUN_JSON).read_text())
    record.update(changes)
    (folder / RUN_JSON).write_text(json.dumps(record, indent=1))


def _edit_rows(folder: Path, edit) -> None:
    """Rewrite results.csv with ``edit(rows)`` (rows as the text of their fields)."""
    with open(folder / "results.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        columns, rows = reader.fieldnames, list(reader)
    rows = edit(rows)
    with open(folder / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _copied_row(rows, **changes):
    return [*rows, {**rows[0], **changes}]


def _without_cell(rows, cell):
    return [row for row in rows if row["cell"] != cell]


TAMPERED = {
    "a tier the snapshot has": (lambda f: _edit_record(f, tier="cpu"),
                                "says tier 'cpu'; its results.csv rows say 'quick'"),
    "a tier the snapshot lacks": (lambda f: _edit_record(f, tier="paper"),
                                  "tier 'paper', which its recipe snapshot lacks"),
    "another recipe": (lambda f: _edit_record(f, recipe="similarities/table1"),
                       "says recipe 'similarities/table1'; its results.csv rows say 'tiny'"),
    "another format": (lambda f: _edit_record(f, format=99),
                       "has format 99; this contrastkit reads format 1"),
    "no format": (lambda f: _edit_record(f, format=None),
                  "has no format; this contrastkit reads format 1"),
    "a row relabelled as a third seed": (
        lambda f: _edit_rows(f, lambda rows: _copied_row(rows, seed="7")),
        "cell 'loss=simclr,temperature=0.5' has seeds 0, 1, 7; run.json records 0, 1"),
    "a row of an invented cell": (
        lambda f: _edit_rows(f, lambda rows: _copied_row(
            rows, cell="loss=simclr,temperature=2.0", temperature="2.0")),
        "cell 'loss=simclr,temperature=2.0', which is not a point of the quick tier's grid"),
    "a row whose axis column is not its cell's level": (
        lambda f: _edit_rows(f, lambda rows: [{**rows[0], "temperature": "1.0"}, *rows[1:]]),
        "a row of cell 'loss=simclr,temperature=0.5' (seed 0, full_neg_mean) has temperature "
        "'1.0'; its cell's id says '0.5'"),
    "a cell of the grid left out": (
        lambda f: _edit_rows(f, lambda rows: _without_cell(rows, "loss=dcl,temperature=1.0")),
        "no rows of cell 'loss=dcl,temperature=1.0'"),
    "a row of another tier": (
        lambda f: _edit_rows(f, lambda rows: _copied_row(rows, tier="cpu", seed="9")),
        "says tier 'quick'; its results.csv rows say 'cpu', 'quick'"),
    "another count of cells": (lambda f: _edit_record(f, cells=5),
                               "records 5 cells; the quick tier's grid has 4"),
    "another count of runs": (lambda f: _edit_record(f, runs=9),
                              "records 9 runs; results.csv has 4 cells x 2 seeds"),
    "another seed recorded": (lambda f: _edit_record(f, seeds=[0, 1, 2]),
                              "has seeds 0, 1; run.json records 0, 1, 2"),
    "a cell run not in the rows": (
        lambda f: _edit_record(f, cell_runs=json.loads((f / RUN_JSON).read_text())
                               ["cell_runs"][:-1]),
        "cell_runs lack cell 'loss=dcl,temperature=1.0' seed 1"),
}


@pytest.mark.parametrize("case", TAMPERED)
def test_a_record_that_disagrees_with_its_rows_is_refused_in_one_line(copy, case, tmp_path):
    tamper, message = TAMPERED[case]
    tamper(copy)
    report = (copy / "report.md").read_bytes()
    with pytest.raises(ValueError) as raised:
        regenerate(copy)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert str(copy) in str(raised.value)
    assert (copy / "report.md").read_bytes() == report  # nothing was written
    with pytest.raises(ValueError) as refused:
        publish(copy, tmp_path / "dest")
    assert str(refused.value) == str(raised.value) and not (tmp_path / "dest").exists()


def test_the_untouched_copy_regenerates_and_the_command_refuses_a_tampered_one(copy, capsys):
    regenerate(copy, copy.parent / "again")
    assert (copy.parent / "again" / "report.md").read_bytes() == (copy / "report.md"
                                                                  ).read_bytes()
    _edit_record(copy, tier="cpu")
    code = main(["reproduce", "--regenerate", str(copy)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and len(captured.err.splitlines()) == 1
    assert captured.err.startswith("contrastkit reproduce: error: ")
    assert "says tier 'cpu'" in captured.err
