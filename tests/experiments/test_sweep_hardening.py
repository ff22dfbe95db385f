"""``reproduce``'s bad input and damaged folders, each one line: the seed count bounded and the
dry run lazy (each grid point checked once) and checking the data is there; a damaged file of a
cell named with what to do; a sweep folder moved elsewhere continues; a full disk while the
results are written is exit status 1, as the README says."""

from __future__ import annotations

import errno
import json
import os
import pathlib

import pytest

from contrastkit.cli import main
from contrastkit.commands import reproduce as command
from contrastkit.experiments import dry_run, load_recipe, reproduce, reproduce_all, run_recipe
from contrastkit.experiments.runner import MAX_SEEDS
from tests.data import archives
from tests.experiments.tiny_recipes import PRETRAIN, SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of


def run_cli(args, capsys):
    code = main(["reproduce", *map(str, args), "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_cell(tmp_path, epochs=2):
    """The tiny pretrain recipe with one cell and one seed."""
    content = content_of(PRETRAIN, grid={"batch_size": [128]}, claims=[])
    content["tiers"]["quick"].update(seeds=1, set={"epochs": epochs})
    return write_recipe(tmp_path, content, "one")


def test_the_command_states_the_api_s_maximum():
    assert command.MAX_SEEDS == MAX_SEEDS == 1000


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_a_seed_count_above_the_maximum_is_one_line_at_once(tmp_path, capsys, extra):
    path = write_recipe(tmp_path, SIMULATE)
    code, out, err = run_cli([path, "--seeds", 100_000_000, "--out", tmp_path / "o", *extra],
                             capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "seeds must be at most 1000 (each seed is a run of every cell), got 100000000" in err
    assert not (tmp_path / "o").exists()


def test_every_entry_point_bounds_the_seeds(tmp_path):
    path = write_recipe(tmp_path, SIMULATE)
    for call in (lambda: reproduce(path, seeds=MAX_SEEDS + 1, dry_run=True),
                 lambda: reproduce_all("quick", seeds=MAX_SEEDS + 1, dry_run=True),
                 lambda: run_recipe(load_recipe(path), seeds=MAX_SEEDS + 1, out=tmp_path)):
        with pytest.raises(ValueError, match="seeds must be at most 1000"):
            call()


def test_the_dry_run_checks_each_grid_point_once(tmp_path, monkeypatch, capsys):
    path = write_recipe(tmp_path, PRETRAIN)
    built = []
    real = dry_run.cell_config
    monkeypatch.setattr(dry_run, "cell_config",
                        lambda cell, out: built.append(cell.cell_id) or real(cell, out))
    code, out, err = run_cli([path, "--seeds", MAX_SEEDS, "--dry-run", "--out", tmp_path / "o"],
                             capsys)
    assert (code, err) == (0, "")
    assert out.startswith("2000 cells (2 grid points x seeds) of ")
    assert built == ["batch_size=64", "batch_size=128"]


def test_the_dry_run_refuses_missing_data_and_passes_when_it_is_there(tmp_path, capsys):
    path = write_recipe(tmp_path, PRETRAIN)  # its paper tier: CIFAR-10
    (tmp_path / "empty").mkdir()
    code, out, err = run_cli([path, "--tier", "paper", "--dry-run", "--data-dir",
                              tmp_path / "empty", "--out", tmp_path / "o"], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "every cell of tiny (paper) is valid, but the data of cell batch_size=256" in err
    assert "cifar10 not found" in err and "--data-dir" in err
    archives.write_cifar10_archive(tmp_path / "data")
    code, out, err = run_cli([path, "--tier", "paper", "--dry-run", "--data-dir",
                              tmp_path / "data", "--out", tmp_path / "o"], capsys)
    assert (code, err) == (0, "") and "are valid" in out


def _unfinished_cell(tmp_path, recipe_path):
    """The folder of the recipe's one cell as a killed sweep leaves it: its record of
    settings, no result.json."""
    cell = load_recipe(recipe_path).cells("quick")[0]
    folder = cell.folder(tmp_path / "out")
    folder.mkdir(parents=True)
    (folder / "cell.json").write_text(json.dumps(cell.identity()))
    return folder


@pytest.mark.parametrize("name, content, where", [
    ("metrics.jsonl", '{"epochs_completed": 1, "loss": 1.0}\n{"epochs_completed": 2, "lo',
     "metrics.jsonl line 2 is not valid JSON"),
    ("convergence.json", '{"epoch": 1, "loss": 1.0, "linear_top1": 9',
     "convergence.json is not valid JSON"),
    ("cell.json", '{"recipe": "one", "tier": "qu', "cell.json is not valid JSON"),
])
def test_a_damaged_file_of_a_cell_is_named_with_what_to_do(tmp_path, capsys, name, content,
                                                           where):
    path = one_cell(tmp_path)
    folder = _unfinished_cell(tmp_path, path)
    (folder / name).write_text(content)
    code, out, err = run_cli([path, "--out", tmp_path / "out"], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert f"{folder / name}" in err and where in err
    assert f"delete {folder} to run the cell again" in err
    assert not (folder / "last.pt").exists()  # refused before training


def test_a_torn_checkpoint_of_a_cell_is_advised_in_the_sweep_s_terms(tmp_path, capsys):
    """A cell's last.pt cut short: the message names it and says what to do with the
    command at hand (no ``resume="previous"`` of the Python API, no ``--resume`` that
    reproduce does not have), and doing it finishes the cell."""
    path = one_cell(tmp_path)
    assert run_cli([path, "--out", tmp_path / "out"], capsys)[0] == 0
    folder = next((tmp_path / "out").glob("cells/*/seed-0"))
    (folder / "result.json").unlink()
    last = folder / "last.pt"
    last.write_bytes(last.read_bytes()[:100])
    code, _, err = run_cli([path, "--out", tmp_path / "out"], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert str(last) in err and "resume=" not in err and "--resume" not in err
    assert "use it with the same command after renaming the cell's previous.pt to last.pt" in err
    (folder / "previous.pt").replace(last)
    assert run_cli([path, "--out", tmp_path / "out"], capsys)[0] == 0
    assert (folder / "result.json").is_file()


def test_a_damaged_result_is_named_with_what_to_do(tmp_path, capsys):
    path = write_recipe(tmp_path, SIMULATE)
    assert run_cli([path, "--out", tmp_path / "out"], capsys)[0] == 0
    result = next((tmp_path / "out").glob("cells/*/seed-0/result.json"))
    result.write_text(result.read_text()[:40])
    code, _, err = run_cli([path, "--out", tmp_path / "out"], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{result} is not valid JSON" in err
    assert "delete it, and the same command runs that cell again" in err
    result.unlink()
    assert run_cli([path, "--out", tmp_path / "out"], capsys)[0] == 0


def test_a_moved_sweep_folder_continues_through_the_command(tmp_path, capsys):
    """A cell interrupted after its training (no result.json) resumes from its checkpoint in
    the folder the sweep was moved to: the run folder's place is not part of its identity."""
    path = one_cell(tmp_path)
    assert run_cli([path, "--out", tmp_path / "before"], capsys)[0] == 0
    result = next((tmp_path / "before").glob("cells/*/seed-0/result.json"))
    first = json.loads(result.read_text())["metrics"]
    result.unlink()
    (tmp_path / "before").rename(tmp_path / "after")
    code, _, err = run_cli([path, "--out", tmp_path / "after"], capsys)
    assert code == 0, err
    moved = next((tmp_path / "after").glob("cells/*/seed-0/result.json"))
    assert json.loads(moved.read_text())["metrics"]["train_loss"] == first["train_loss"]


def test_a_full_disk_while_the_results_are_written_is_exit_status_1(tmp_path, capsys,
                                                                    monkeypatch):
    path = write_recipe(tmp_path, SIMULATE)
    real = pathlib.Path.write_text

    def write_text(self, *args, **kwargs):
        if self.name == ".results.csv.tmp":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", write_text)
    code, out, err = run_cli([path, "--out", tmp_path / "out"], capsys)
    assert code == 1 and len(err.splitlines()) == 1, err
    assert f"cannot write {tmp_path / 'out' / 'results.csv'}: the disk is full" in err
    assert next((tmp_path / "out").glob("cells/*/seed-0/result.json")).is_file()
