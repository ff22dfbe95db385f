"""benchmarks/budget.py: a run record it cannot read is one line naming the file and what is
wrong (exit status 2), never a traceback; the script runs from any folder; its help says what
it compares."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import budget

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "docs" / "reproduction" / "lmcl-fig4-cpu" / "run.json"


def _runs(tmp_path: Path, change=None, text: str | None = None) -> tuple[Path, Path]:
    """A --runs folder holding one published cpu tier's run.json, changed by ``change`` (a
    function of the record) or replaced by ``text``; returns the folder and the record."""
    record = tmp_path / "runs" / "lmcl-fig4-cpu" / "run.json"
    record.parent.mkdir(parents=True)
    shutil.copyfile(PUBLISHED, record)
    if change is not None:
        content = json.loads(record.read_text())
        change(content)
        record.write_text(json.dumps(content))
    if text is not None:
        record.write_text(text)
    return tmp_path / "runs", record


def _command(content: dict, command: str) -> None:
    content["command"] = command


BAD_RECORDS = {
    "truncated": (None, PUBLISHED.read_text()[:200], "is not valid JSON"),
    "without cell_seconds": (lambda c: c.pop("cell_seconds"), None,
                             "lacks cell_seconds: not the record of a finished sweep"),
    "--jobs 0": (lambda c: _command(c, "contrastkit reproduce lmcl/fig4 --jobs 0"), None,
                 "its command runs --jobs 0; expected a whole number of jobs >= 1"),
    "--jobs -1": (lambda c: _command(c, "contrastkit reproduce lmcl/fig4 --jobs -1"), None,
                  "its command runs --jobs -1; expected a whole number of jobs >= 1"),
    "cell_seconds as text": (lambda c: c.update(cell_seconds="long"), None,
                             "cell_seconds must be a number of seconds >= 0, got 'long'"),
    "a cell run that is not a mapping": (lambda c: c.update(cell_runs=[1]), None,
                                         "cell_runs must be a list of runs"),
}


@pytest.mark.parametrize("case", BAD_RECORDS)
def test_a_record_it_cannot_read_is_one_line_naming_the_file(tmp_path, capsys, case):
    change, text, message = BAD_RECORDS[case]
    runs, record = _runs(tmp_path, change, text)
    with pytest.raises(SystemExit) as stopped:
        budget.main(["--runs", str(runs)])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"benchmarks.budget: error: {record}") and message in err


def test_a_runs_folder_that_is_not_there_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        budget.main(["--runs", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and len(err.splitlines()) == 1
    assert f"--runs {tmp_path / 'nowhere'} is not a folder" in err


def test_the_script_runs_from_any_folder_and_its_help_says_what_it_compares(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # not the repository's root
    helped = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "budget.py"), "--help"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                            check=False)
    assert helped.returncode == 0, helped.stderr
    text = " ".join(helped.stdout.split())
    assert f"committed at --before (default {budget.BEFORE}, before the training loop" in text
    assert "this throughput work" not in text


def test_the_published_records_are_read_from_the_repository_wherever_it_runs(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    budget.main([])
    printed = capsys.readouterr().out
    content = json.loads(PUBLISHED.read_text())
    wall = content["cell_seconds"] / int(content["command"].split("--jobs ")[1].split()[0])
    assert (f"| `lmcl/fig4` | — x — | — | — | {content['cells']} x {len(content['seeds'])} | "
            in printed) and f"| {wall / 60:.0f} min |" in printed
    assert "`python -m benchmarks.budget --runs docs/reproduction`" in printed
