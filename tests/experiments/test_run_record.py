"""The run record is complete: each cell keeps the commit and time of the invocation that
trained it (a resumed sweep does not overwrite them), the tier lists its invocations, the
packages, the CPU and the datasets' checksums, no path of the machine that ran it, and a record
written before these fields regenerates with them "not recorded"."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from contrastkit.data import load_digits
from contrastkit.experiments import run_record as run_record_module
from contrastkit.experiments import runner
from contrastkit.experiments.evidence import RUN_JSON
from contrastkit.experiments.provenance import (
    NOT_INSTALLED,
    PACKAGES,
    dataset_checksums,
    packages,
    relative,
)
from contrastkit.experiments.recipe import load_recipe
from contrastkit.experiments.report_setup import setup_facts
from contrastkit.experiments.reproduce import regenerate, reproduce
from contrastkit.files import write_json_atomic
from tests.experiments.tiny_recipes import SIMULATE, recipe, write_recipe

#: Two cells of one seed each, a few steps of a simulation: well under a second.
TWO_CELLS = recipe(SIMULATE, grid={"loss": ["simclr", "dcl"]},
                   base={**SIMULATE["base"], "steps": 20},
                   tiers={"quick": {"seeds": 1, "estimate_minutes": 0.1}})
#: The fields a record written before them lacks.
NEW_FIELDS = ("invocations", "packages", "cpu", "datasets")
_ABSOLUTE = re.compile(r"(?:^|[\s=\"'(])(?:/|[A-Za-z]:\\)[\w.-]+[/\\]")


def _commit(monkeypatch, commit: str) -> None:
    """Make the code that trains cells and writes the record say it is ``commit``."""
    monkeypatch.setattr(runner, "source_commit", lambda: (commit, False))
    monkeypatch.setattr(run_record_module, "source_commit", lambda: (commit, False))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_each_cell_and_the_tier_record_the_code_time_software_and_machine(tmp_path,
                                                                           monkeypatch):
    _commit(monkeypatch, "a" * 40)
    out = tmp_path / "out"
    reproduce(write_recipe(tmp_path, TWO_CELLS), out=out, progress=False)
    results = [json.loads(path.read_text()) for path in sorted(out.glob("cells/*/*/result.json"))]
    assert len(results) == 2
    for result in results:
        assert result["commit"] == "a" * 40 and result["source_dirty"] is False
        assert result["seconds"] > 0
    record = json.loads((out / RUN_JSON).read_text())
    assert [run["commit"] for run in record["cell_runs"]] == ["a" * 40] * 2
    assert record["cell_seconds"] == pytest.approx(sum(r["seconds"] for r in results))
    (invocation,) = record["invocations"]
    assert invocation["commit"] == "a" * 40 and invocation["runs"] == 2
    assert invocation["cell_seconds"] == pytest.approx(record["cell_seconds"])
    assert invocation["seconds"] == record["seconds"] > 0
    assert set(record["packages"]) == set(PACKAGES)
    assert record["cpu"]["logical_cores"] >= 1 and record["cpu"]["threads"] == sorted(
        {result["threads"] for result in results})
    assert "model" in record["cpu"]
    assert record["datasets"] == {}  # a simulation reads no dataset


def test_a_resumed_sweep_keeps_each_cells_own_commit_and_time(tmp_path, monkeypatch):
    path = write_recipe(tmp_path, TWO_CELLS)
    out = tmp_path / "out"
    _commit(monkeypatch, "1" * 40)
    reproduce(path, out=out, progress=False)
    kept, redone = sorted(out.glob("cells/*/*/result.json"))
    first = json.loads(kept.read_text())
    redone.unlink()  # that cell is trained again by the next invocation
    _commit(monkeypatch, "2" * 40)
    reproduce(path, out=out, progress=False)
    assert json.loads(kept.read_text()) == first
    assert json.loads(redone.read_text())["commit"] == "2" * 40
    record = json.loads((out / RUN_JSON).read_text())
    by_cell = {run["cell"]: run for run in record["cell_runs"]}
    assert by_cell[kept.parent.parent.name]["commit"] == "1" * 40
    assert by_cell[kept.parent.parent.name]["seconds"] == first["seconds"]
    assert by_cell[redone.parent.parent.name]["commit"] == "2" * 40
    assert record["commit"] == "2" * 40
    assert [one["commit"] for one in record["invocations"]] == ["1" * 40, "2" * 40]
    assert [one["runs"] for one in record["invocations"]] == [2, 1]
    assert record["cell_seconds"] == pytest.approx(sum(run["seconds"]
                                                       for run in record["cell_runs"]))
    report = (out / "report.md").read_text()
    assert "| runs trained by | 1 run: commit 111111111111; 1 run: commit 222222222222 |" \
        in report
    assert "| invocations | 2: " in report


def test_a_record_names_no_path_of_the_machine_that_ran_it(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    path = write_recipe(tmp_path / "recipes", TWO_CELLS)
    reproduce(path, out=work / "out", progress=False, data_dir=str(tmp_path / "data"))
    text = (work / "out" / RUN_JSON).read_text()
    record = json.loads(text)
    assert str(tmp_path) not in text
    assert not [value for value in _strings(record) if _ABSOLUTE.search(value)]
    assert record["recipe_source"] == "../recipes/tiny.yaml"
    assert "--out out " in record["command"] and "--data-dir ../data" in record["command"]


def test_a_path_is_written_relative_to_the_working_folder(tmp_path):
    assert relative(tmp_path / "a" / "b", tmp_path) == str(Path("a") / "b")
    assert relative(tmp_path / "x", tmp_path / "a") == str(Path("..") / "x")
    assert relative("runs/t1") == "runs/t1"


def test_a_dataset_checksum_is_that_of_the_arrays_the_runs_read(monkeypatch):
    sums = dataset_checksums([("digits", "data"), ("synthetic", "data")])
    assert set(sums) == {"digits"} and set(sums["digits"]) == {"train", "test"}
    for split, value in sums["digits"].items():
        loaded = load_digits(split)
        digest = hashlib.sha256(loaded.images.numpy().tobytes())
        digest.update(loaded.labels.numpy().astype(np.int64).tobytes())
        assert value == f"sha256:{digest.hexdigest()}"
    assert sums["digits"]["train"] != sums["digits"]["test"]
    from contrastkit.data import registry

    def broken(name, split, root="data", download=False):
        raise ValueError("the file is gone")

    monkeypatch.setattr(registry, "load_dataset", broken)
    monkeypatch.setattr("contrastkit.data.load_dataset", broken)
    assert dataset_checksums([("digits", "data")]) == {
        "digits": {"test": "not computed: the file is gone",
                   "train": "not computed: the file is gone"}}


def test_a_package_that_is_not_installed_is_said_so(monkeypatch):
    import importlib.metadata as metadata

    real = metadata.version

    def version(name):
        if name == "mlxtend":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    found = packages()
    assert list(found) == list(PACKAGES) and found["mlxtend"] == NOT_INSTALLED
    assert found["numpy"] == np.__version__


def test_the_record_of_a_tier_that_reads_a_dataset_holds_its_checksums(tmp_path):
    content = {"title": "Tiny hard negatives on digits", "reproduces": "nothing: a test recipe",
               "kind": "hardneg", "base": {"dataset": "digits", "backbone": "small_cnn"},
               "grid": {"beta": [0, 5]}, "metrics": ["nc_gap"],
               "tiers": {"quick": {"seeds": 1, "estimate_minutes": 0.1}}}
    tiny = load_recipe(write_recipe(tmp_path, content))
    cells = tiny.cells("quick")
    out = tmp_path / "out"
    for cell in cells:  # finished before results recorded their commit
        write_json_atomic(cell.folder(out) / "result.json",
                          {"metrics": {}, "cell": cell.as_dict(), "seconds": 2.0,
                           "threads": 1})
    record = run_record_module.run_record(tiny, "quick", out, cells,
                                          datetime.now(timezone.utc), 0.5, "x",
                                          finished_before={runner.key(c) for c in cells})
    assert record["datasets"] == dataset_checksums([("digits", "data")])
    assert [run["commit"] for run in record["cell_runs"]] == [None, None]  # not invented
    assert record["invocations"][-1]["runs"] == 0
    assert record["cell_seconds"] == 4.0


def test_an_older_record_regenerates_with_what_it_lacks_not_recorded(tmp_path):
    out = tmp_path / "out"
    reproduce(write_recipe(tmp_path, TWO_CELLS), out=out, progress=False)
    record = json.loads((out / RUN_JSON).read_text())
    for field in NEW_FIELDS:
        del record[field]
    for run in record["cell_runs"]:
        del run["commit"], run["source_dirty"]
    (out / RUN_JSON).write_text(json.dumps(record))
    regenerate(out)
    report = (out / "report.md").read_text()
    for name in ("datasets", "runs trained by", "packages", "invocations"):
        assert f"| {name} | not recorded |" in report
    threads = {run["threads"] for run in record["cell_runs"]}
    assert f"| CPU | model not recorded, {threads.pop()} thread" in report  # from the runs


def test_the_setup_says_what_was_trained_from_the_records_schedule():
    from types import SimpleNamespace

    schedule = {"batch_size=32": {"steps": 8800, "epochs": 200},
                "batch_size=256": {"steps": 1000, "epochs": 200}}
    facts = dict(setup_facts(SimpleNamespace(name="r", fixed="epochs"), "cpu",
                             [{"cell": "batch_size=32", "seed": 0}],
                             {"schedule": schedule}))
    assert facts["trained"] == "200 epochs (1000 to 8800 optimizer steps) per run"
    plain = dict(setup_facts(SimpleNamespace(name="r"), "cpu", [{"cell": "a", "seed": 0}], {}))
    assert plain["trained"] is None and "record amended" not in plain


def test_what_was_added_to_a_record_after_its_run_is_said():
    from types import SimpleNamespace

    amended = ["2026-11-27: the datasets' checksums computed after the run"]
    facts = dict(setup_facts(SimpleNamespace(name="r"), "cpu", [{"cell": "a", "seed": 0}],
                             {"amended": amended}))
    assert facts["record amended"] == amended[0]


def test_no_committed_record_names_a_path_of_the_machine_that_ran_it():
    records = sorted((Path(__file__).resolve().parents[2] / "docs" / "reproduction").glob(
        "*/run.json"))
    assert records
    for path in records:
        found = [value for value in _strings(json.loads(path.read_text()))
                 if _ABSOLUTE.search(value)]
        assert not found, f"{path}: {found[:2]}"


def test_a_duration_in_the_report_never_reads_60_seconds():
    from contrastkit.experiments.report_setup import _short_duration

    assert _short_duration(239.6) == "4 min 0 s"
    assert _short_duration(61.2) == "1 min 1 s"
    assert _short_duration(12.54) == "12.5 s"
    assert _short_duration(None) == "an unrecorded time"
