"""The evidence of a sweep: run.json (code, machine, command, times, each cell's steps and
threads, the recipe's snapshot), a report regenerated from results.csv and run.json alone
identical to the sweep's, and the evidence folder that publish copies (only the cell files the
figures declare, never a checkpoint)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import contrastkit
from contrastkit.experiments import figures as figures_package
from contrastkit.experiments.evidence import (
    RUN_JSON,
    read_run_record,
    source_commit,
    write_run_record,
)
from contrastkit.experiments.figures import FIGURES, CellFile, FigureData, FigureSpec
from contrastkit.experiments.recipe import load_recipe
from contrastkit.experiments.reproduce import publish, regenerate, reproduce
from contrastkit.experiments.results import write_results
from tests.experiments.synthetic_rows import make_rows
from tests.experiments.tiny_recipes import SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of

#: A simulation over a grid of a string axis and a number axis whose levels are an int and a
#: float, 2 seeds, with a claim: small enough to run in a few seconds.
GRID_SIMULATION = content_of(
    SIMULATE, grid={"loss": ["simclr", "dcl"], "temperature": [0.5, 1]},
    base={**SIMULATE["base"], "steps": 60},
    claims=[{"id": "dcl_lower", "text": "DCL's full-batch negative mean is lower",
             "metric": "full_neg_mean", "test": "lower", "treatment": {"loss": "dcl"},
             "control": {"loss": "simclr"}}],
    tiers={"quick": {"seeds": 2, "estimate_minutes": 0.1}})

#: A hard-negative recipe whose three figures read the cells' files; its sweeps are made up
#: (:func:`_fake_sweep`), not run.
HARDNEG = {"title": "Tiny hard negatives", "reproduces": "nothing: a test recipe",
           "kind": "hardneg", "figure": ["nc_curves", "class_mean_spectra", "representations"],
           "grid": {"beta": [0, 5]}, "metrics": ["nc_gap"],
           "tiers": {"quick": {"seeds": 2, "estimate_minutes": 0.1}}}


def _same_files(a: Path, b: Path, names=("report.md", "summary.csv")) -> None:
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _fake_sweep(folder: Path, content: dict, tmp_path: Path) -> Path:
    """A sweep folder of the hardneg recipe ``content`` as the runner leaves it, without
    running: results.csv, run.json and, per cell and seed, curves.json, representation.npz and
    files no figure reads (a checkpoint, a config); then its summary, report and figures."""
    recipe = load_recipe(write_recipe(tmp_path, content, "fake"))
    rows = [{**row, "recipe": recipe.name} for row in make_rows(
        {"beta": [0, 5]}, 2,
        {"nc_gap": lambda axes, seed: 0.1 + 0.01 * axes["beta"] + 0.001 * seed})]
    folder.mkdir(parents=True)
    write_results(rows, folder / "results.csv")
    write_run_record(folder, {"format": 1, "recipe": recipe.name, "recipe_source": recipe.source,
                              "tier": "quick", "command": "made up", "recipe_content": content})
    rng = np.random.default_rng(0)
    for beta in (0, 5):
        for seed in (0, 1):
            cell = folder / "cells" / f"beta={beta}" / f"seed-{seed}"
            cell.mkdir(parents=True)
            curves = [{"epoch": epoch, "within_class_distance": 1 / epoch, "equinorm": 0.1,
                       "equiangularity": 0.2, "etf_distance": 0.3 / epoch}
                      for epoch in (1, 2, 3)]
            (cell / "curves.json").write_text(json.dumps(curves))
            z = rng.normal(size=(30, 2))
            np.savez(cell / "representation.npz", z=z / np.linalg.norm(z, axis=1, keepdims=True),
                     labels=np.arange(30) % 3, spectrum=np.array([1.0, 0.5 + 0.1 * beta]),
                     big=np.zeros(1000))
            (cell / "checkpoint_last.pt").write_bytes(b"\0" * 4096)
            (cell / "config.yaml").write_text("seed: 0\n")
            (cell / "result.json").write_text("{}")
    regenerate(folder)
    return folder


def test_the_run_record_says_what_ran_where_and_with_what(tmp_path, monkeypatch):
    path = write_recipe(tmp_path, SIMULATE)
    monkeypatch.chdir(tmp_path)  # the record's paths are relative to the working folder
    reproduce(path, out=tmp_path / "out", progress=False, seeds=1)
    record = json.loads((tmp_path / "out" / RUN_JSON).read_text())
    assert record["recipe"] == "tiny" and record["recipe_source"] == "tiny.yaml"
    assert (record["tier"], record["seeds"], record["cells"], record["runs"]) == (
        "quick", [0], 1, 1)
    assert record["command"] == ("contrastkit reproduce tiny.yaml --tier quick --out out "
                                 "--seeds 1")
    assert record["contrastkit"] == contrastkit.__version__
    assert record["python"] == ".".join(map(str, sys.version_info[:3]))
    import torch

    assert record["torch"] == torch.__version__ and "CPU cores" in record["machine"]
    assert record["commit"] == source_commit()[0]
    assert record["seconds"] > 0 and record["cell_seconds"] > 0 and record["started"]
    run = record["cell_runs"][0]
    assert (run["cell"], run["seed"], run["steps"], run["epochs"]) == (
        "default", 0, SIMULATE["base"]["steps"], None)
    assert isinstance(run["threads"], int) and run["threads"] >= 1
    assert record["schedule"] == {"default": {"steps": SIMULATE["base"]["steps"],
                                              "epochs": None}}
    assert record["data"] == "free embeddings (simulation)"
    assert record["recipe_content"] == yaml.safe_load(path.read_text())
    assert record["protocol"] is None  # the recipe declares no protocol


def test_the_commit_is_this_checkouts_and_none_elsewhere(tmp_path, monkeypatch):
    package = Path(contrastkit.__file__).parent
    done = subprocess.run(["git", "-C", str(package), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=False)
    commit, dirty = source_commit()
    if done.returncode == 0:
        assert commit == done.stdout.strip() and isinstance(dirty, bool)
    copy = tmp_path / "site-packages" / "contrastkit"
    copy.mkdir(parents=True)
    (copy / "__init__.py").write_text("")
    monkeypatch.setattr(contrastkit, "__file__", str(copy / "__init__.py"))
    assert source_commit() == (None, None)  # an installed copy: not a git checkout


def test_the_commit_is_none_when_git_fails(monkeypatch):
    def missing(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(subprocess, "run", missing)
    assert source_commit() == (None, None)


def test_regenerating_a_fresh_sweep_gives_the_same_summary_and_report(tmp_path):
    path = write_recipe(tmp_path, GRID_SIMULATION)
    done = reproduce(path, out=tmp_path / "out", progress=False)
    assert [verdict.claim_id for verdict in done.verdicts] == ["dcl_lower"]
    again = regenerate(tmp_path / "out", tmp_path / "again")
    _same_files(tmp_path / "out", tmp_path / "again")
    assert again.rows == done.rows and again.verdicts == done.verdicts
    assert [type(row["temperature"]) for row in again.rows[::len(SIMULATE["metrics"])]] == [
        float, float, int, int] * 2  # the grid's 0.5 and 1, two seeds each
    in_place = (tmp_path / "out" / "report.md").read_bytes()
    regenerate(tmp_path / "out")
    assert (tmp_path / "out" / "report.md").read_bytes() == in_place


def test_the_report_regenerates_from_the_snapshot_after_the_recipe_changes(tmp_path):
    path = write_recipe(tmp_path, SIMULATE)
    reproduce(path, out=tmp_path / "out", progress=False, seeds=1)
    write_recipe(tmp_path, content_of(SIMULATE, title="A new title",
                                      notes="Notes added later."))
    regenerate(tmp_path / "out", tmp_path / "again")
    _same_files(tmp_path / "out", tmp_path / "again")
    assert "A new title" not in (tmp_path / "again" / "report.md").read_text()


def test_publish_copies_the_evidence_and_only_the_declared_cell_files(tmp_path):
    sweep = _fake_sweep(tmp_path / "sweep", HARDNEG, tmp_path)
    written = publish(sweep, tmp_path / "docs" / "hn-quick")
    names = sorted(path.relative_to(tmp_path / "docs" / "hn-quick").as_posix()
                   for path in written)
    cells = [f"cells/beta={beta}/seed-{seed}/{name}" for beta in (0, 5) for seed in (0, 1)
             for name in ("curves.json", "representation.npz")]
    assert names == sorted(["class_mean_spectra.png", "nc_curves.png", "report.md",
                            "representations.png", "results.csv", "run.json", "summary.csv",
                            *cells])
    dest = tmp_path / "docs" / "hn-quick"
    with np.load(dest / "cells" / "beta=5" / "seed-1" / "representation.npz") as saved:
        assert sorted(saved.files) == ["labels", "spectrum", "z"]  # not "big"
        np.testing.assert_array_equal(saved["spectrum"], [1.0, 1.0])
    assert not list(dest.rglob("*.pt")) and not list(dest.rglob("config.yaml"))
    again = regenerate(dest, tmp_path / "again")
    _same_files(sweep, tmp_path / "again")
    for figure in ("class_mean_spectra.png", "nc_curves.png", "representations.png"):
        assert (tmp_path / "again" / figure).stat().st_size > 0
    assert again.report_path == tmp_path / "again" / "report.md"


def test_an_npz_keeps_only_the_arrays_of_the_figures_drawn(tmp_path):
    sweep = _fake_sweep(tmp_path / "sweep", {**HARDNEG, "figure": ["class_mean_spectra"]},
                        tmp_path)
    publish(sweep, tmp_path / "dest")
    with np.load(tmp_path / "dest" / "cells" / "beta=0" / "seed-0" / "representation.npz") \
            as saved:
        assert saved.files == ["spectrum"]
    assert not list((tmp_path / "dest").rglob("curves.json"))


def test_publish_replaces_an_earlier_evidence_folder_and_refuses_any_other(tmp_path):
    sweep = _fake_sweep(tmp_path / "sweep", HARDNEG, tmp_path)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "report.md").write_text("old")
    (dest / "stale_figure.png").write_bytes(b"png")
    publish(sweep, dest)
    assert not (dest / "stale_figure.png").exists()
    assert (dest / "report.md").read_bytes() == (sweep / "report.md").read_bytes()
    (dest / "README.md").write_text("mine")
    with pytest.raises(ValueError, match="holds README.md, which is no part of an evidence"):
        publish(sweep, dest)
    assert (dest / "README.md").is_file() and (dest / "run.json").is_file()
    with pytest.raises(ValueError, match="is the sweep folder itself"):
        publish(sweep, sweep)


def test_a_folder_without_its_record_or_report_is_no_evidence(tmp_path):
    sweep = _fake_sweep(tmp_path / "sweep", HARDNEG, tmp_path)
    (sweep / "summary.csv").unlink()
    with pytest.raises(ValueError, match="lacks summary.csv: not a finished sweep"):
        publish(sweep, tmp_path / "dest")
    (sweep / RUN_JSON).unlink()
    with pytest.raises(ValueError, match="holds no run.json"):
        regenerate(sweep)
    with pytest.raises(ValueError, match="holds no run.json"):
        read_run_record(tmp_path)


def test_a_figure_reads_only_the_cell_files_it_declares(tmp_path):
    data = FigureData([], [], [], [{"cell": "a=1", "seed": 0}], tmp_path,
                      cell_files=("curves.json",))
    (tmp_path / "cells" / "a=1" / "seed-0").mkdir(parents=True)
    (tmp_path / "cells" / "a=1" / "seed-0" / "curves.json").write_text("[]")
    assert data.cell_paths("a=1", "curves.json") == [
        tmp_path / "cells" / "a=1" / "seed-0" / "curves.json"]
    assert data.cell_file("a=1", 1, "curves.json") is None
    with pytest.raises(ValueError, match="reads the cell file 'eval.json' without declaring"):
        data.cell_file("a=1", 0, "eval.json")


def test_the_cell_files_of_several_figures_are_united(monkeypatch):
    specs = {"one": FigureSpec(lambda data: None, cell_files=(CellFile("r.npz", ("z",)),
                                                               "c.json")),
             "two": FigureSpec(lambda data: None, cell_files=(CellFile("r.npz", ("s", "z")),)),
             "three": FigureSpec(lambda data: None, cell_files=("c.json", "r.npz"))}
    monkeypatch.setattr(FIGURES, "get", specs.__getitem__)
    assert figures_package.cell_files(["one", "two"]) == {"r.npz": ("z", "s"), "c.json": None}
    assert figures_package.cell_files(["one", "three"]) == {"r.npz": None, "c.json": None}
    assert figures_package.cell_files([]) == {}


def test_every_shipped_figure_that_reads_cells_declares_its_files():
    assert FIGURES.get("nc_curves").cell_files == ("curves.json",)
    assert {item.name for name in ("representations", "class_mean_spectra")
            for item in FIGURES.get(name).files()} == {"representation.npz"}
    assert FIGURES.get("toy_scatter").cell_files == ("points.npz",)
    assert set(FIGURES.get("distance_histograms").cell_files) == {"eval.json", "config.yaml"}
    for name in FIGURES:
        assert not any(item.name.endswith((".pt", ".pth", ".ckpt"))
                       for item in FIGURES.get(name).files()), name


def test_the_protocol_table_comes_from_settings_table_where_it_exists(monkeypatch):
    import types
    from types import SimpleNamespace

    from contrastkit.experiments.reproduce import protocol_table

    table = [{"setting": "k", "paper": 256, "ours": 32, "reason": "a first look"}]
    calls = []
    stand_in = types.ModuleType("contrastkit.experiments.protocol")
    stand_in.settings_table = lambda recipe, tier, **where: calls.append((tier, where)) or table
    monkeypatch.setitem(sys.modules, "contrastkit.experiments.protocol", stand_in)
    declared = SimpleNamespace(name="r", protocol={"settings": {"k": 256}})
    assert protocol_table(declared, "quick") == table and calls == [("quick", {})]
    assert protocol_table(declared, "cpu", "data") == table
    assert calls[-1] == ("cpu", {"data_dir": "data"})
    assert protocol_table(SimpleNamespace(name="r", protocol=None), "quick") is None
    assert protocol_table(SimpleNamespace(name="r"), "quick") is None

    def broken(recipe, tier, **where):
        raise ValueError("no such dataset")

    stand_in.settings_table = broken
    with pytest.warns(UserWarning, match="could not be built \\(no such dataset\\)"):
        assert protocol_table(declared, "quick") is None
    monkeypatch.setitem(sys.modules, "contrastkit.experiments.protocol", None)  # not there
    assert protocol_table(declared, "quick") is None


def test_the_protocol_table_is_recorded_so_a_regenerated_report_shows_it(tmp_path,
                                                                          monkeypatch):
    module = sys.modules["contrastkit.experiments.run_record"]
    table = [{"setting": "steps", "paper": 1000, "ours": 300, "reason": "a first look"}]
    monkeypatch.setattr(module, "protocol_table", lambda recipe, tier, data_dir=None: table)
    reproduce(write_recipe(tmp_path, SIMULATE), out=tmp_path / "out", progress=False)
    assert json.loads((tmp_path / "out" / RUN_JSON).read_text())["protocol"] == table
    text = (tmp_path / "out" / "report.md").read_text()
    assert "| steps | 1000 | 300 | a first look |" in text
    monkeypatch.setattr(module, "protocol_table", lambda recipe, tier, data_dir=None: None)
    regenerate(tmp_path / "out", tmp_path / "again")
    _same_files(tmp_path / "out", tmp_path / "again")
