"""A sweep's ``--out`` folder is recognisably the sweep's (a marker written when the sweep
starts): a folder that holds anything else is refused unless ``--overwrite``, and even then
only the sweep's own files are written; the same for ``reproduce --all``'s recipe folders."""

from __future__ import annotations

import json

import pytest

from contrastkit.cli import main
from contrastkit.experiments import recipe, reproduce, reproduce_all
from contrastkit.experiments.sweep_folder import MARKER
from tests.experiments.tiny_recipes import SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of


def run_cli(args, capsys):
    code = main(["reproduce", *map(str, args), "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def simulation(tmp_path):
    return write_recipe(tmp_path, SIMULATE, "sim")


def users_folder(folder):
    """A folder of the user's own, with files named like a sweep's."""
    folder.mkdir(parents=True)
    (folder / "report.md").write_text("my own report\n")
    (folder / "results.csv").write_text("my,own\n1,2\n")
    (folder / "notes.txt").write_text("keep me\n")
    return {path.name: path.read_text() for path in folder.iterdir()}


def test_a_folder_that_holds_other_files_is_refused_and_left_as_it_was(simulation, tmp_path,
                                                                       capsys):
    out = tmp_path / "mine"
    before = users_folder(out)
    for extra in ([], ["--dry-run"]):
        code, printed, err = run_cli([simulation, "--out", out, *extra], capsys)
        assert code == 2 and printed == "" and len(err.splitlines()) == 1, err
        assert err.startswith(f"contrastkit reproduce: error: --out {out} holds ")
        assert "notes.txt" in err and "--overwrite" in err and "overwrite=True" not in err
        assert {path.name: path.read_text() for path in out.iterdir()} == before


def test_the_python_api_names_its_own_argument(simulation, tmp_path):
    users_folder(tmp_path / "mine")
    with pytest.raises(ValueError, match=r"overwrite=True") as error:
        reproduce(simulation, out=tmp_path / "mine", progress=False)
    assert "--overwrite" not in str(error.value)


def test_overwrite_writes_the_sweep_s_files_and_touches_nothing_else(simulation, tmp_path,
                                                                     capsys):
    out = tmp_path / "mine"
    users_folder(out)
    code, _, err = run_cli([simulation, "--out", out, "--overwrite"], capsys)
    assert code == 0, err
    assert (out / "notes.txt").read_text() == "keep me\n"
    assert (out / "report.md").read_text() != "my own report\n"
    assert (out / MARKER).is_file()


def test_a_sweep_folder_is_recognised_and_continued(simulation, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert run_cli([simulation, "--out", out], capsys)[0] == 0
    assert json.loads((out / MARKER).read_text())["recipe"] == "sim"
    code, _, err = run_cli([simulation, "--out", out], capsys)  # no --overwrite needed
    assert code == 0, err


def test_an_empty_or_new_folder_needs_nothing(simulation, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for name in ("empty", "new"):
        assert run_cli([simulation, "--out", tmp_path / name], capsys)[0] == 0


def test_a_sweep_folder_of_an_earlier_contrastkit_is_continued(simulation, tmp_path, capsys):
    """A folder written before the marker existed (its cells and run.json, no marker) is a
    sweep folder: its finished cells are not lost to a refusal."""
    out = tmp_path / "sweep"
    assert run_cli([simulation, "--out", out], capsys)[0] == 0
    (out / MARKER).unlink()
    code, _, err = run_cli([simulation, "--out", out], capsys)
    assert code == 0, err
    assert (out / MARKER).is_file()


def test_the_sweep_of_another_recipe_is_refused(simulation, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert run_cli([simulation, "--out", out], capsys)[0] == 0
    other = write_recipe(tmp_path, SIMULATE, "other")
    code, _, err = run_cli([other, "--out", out], capsys)
    assert code == 2 and "holds the sweep of recipe sim (tier quick)" in err


def test_all_refuses_a_recipe_folder_that_is_not_a_sweep_s(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "recipes"
    write_recipe(folder / "papers", SIMULATE, "fig9")
    write_recipe(folder / "papers", content_of(SIMULATE, title="Another"), "fig8")
    monkeypatch.setattr(recipe, "RECIPES", folder)
    out = tmp_path / "out"
    before = users_folder(out / "papers-fig9" / "quick")
    code, _, err = run_cli(["--all", "--tier", "quick", "--out", out], capsys)
    assert code == 2 and "papers-fig9" in err and "--overwrite" in err, err
    assert not (out / "papers-fig8").exists()  # refused before anything ran
    assert {path.name: path.read_text()
            for path in (out / "papers-fig9" / "quick").iterdir()} == before
    done = reproduce_all("quick", out=out, progress=False, overwrite=True)
    assert all((reproduction.out / MARKER).is_file() for reproduction in done)
    assert (out / "papers-fig9" / "quick" / "notes.txt").read_text() == "keep me\n"


def test_a_pretrain_cell_reports_a_collapse_rather_than_stopping_on_it(tmp_path):
    """A collapsed cell is a result (its similarity statistics say so); a recipe may still
    ask for the stop."""
    from contrastkit.experiments import load_recipe
    from contrastkit.experiments.cell_folders import cell_config
    from tests.experiments.tiny_recipes import PRETRAIN, write_recipe
    from tests.experiments.tiny_recipes import recipe as content_of

    cell = load_recipe(write_recipe(tmp_path, PRETRAIN)).cells("quick")[0]
    assert cell_config(cell, tmp_path / "out").stop_on_collapse is False
    content = content_of(PRETRAIN)
    content["base"]["stop_on_collapse"] = True
    cell = load_recipe(write_recipe(tmp_path, content, "stops")).cells("quick")[0]
    assert cell_config(cell, tmp_path / "out").stop_on_collapse is True
