"""``reproduce(...)`` end to end and the ``contrastkit reproduce`` command: --list, --dry-run,
a run with its outputs, and bad input as one line on standard error with exit status 2.

The statistics, claims and report are another module's; where it is not installed yet, the
tests use small stand-ins with the same signatures (:func:`h2`)."""

from __future__ import annotations

import csv
import importlib
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from contrastkit.cli import main
from contrastkit.experiments import recipe, reproduce
from contrastkit.experiments.reproduce import default_out
from tests.data import archives
from tests.experiments.tiny_recipes import PRETRAIN, SIMULATE, write_recipe
from tests.experiments.tiny_recipes import recipe as content_of


def _write_csv(rows, path):
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _summarize(rows):
    groups = {}
    for row in rows:
        groups.setdefault((row["cell"], row["metric"]), []).append(row["value"])
    return [{"cell": cell, "metric": metric, "n": len(values), "mean": sum(values) / len(values)}
            for (cell, metric), values in groups.items()]


def _evaluate_claims(chosen, rows):
    return [SimpleNamespace(claim_id=claim.id, text=claim.text, verdict="inconclusive",
                            effect=None, effect_size=None, p_value=None, n=0, detail="")
            for claim in chosen.claims]


def _write_report(chosen, tier, rows, summary, verdicts, out, run_info):
    path = Path(out) / "report.md"
    path.write_text(f"# {chosen.title}\n\n{run_info['command']}\n")
    return path


STAND_INS = {
    "results": {"write_results": _write_csv, "summarize": _summarize,
                "write_summary": _write_csv},
    "claims": {"evaluate_claims": _evaluate_claims},
    "report": {"write_report": _write_report},
}


@pytest.fixture
def h2(monkeypatch):
    """The results, claims and report modules: the real ones when they exist, else
    stand-ins."""
    for name, functions in STAND_INS.items():
        module = f"contrastkit.experiments.{name}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError:
            monkeypatch.setitem(sys.modules, module, types.SimpleNamespace(**functions))


def run_cli(args, capsys):
    code = main(["reproduce", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_reproduce_runs_the_cells_then_writes_results_summary_verdicts_and_report(
        tmp_path, h2):
    content = content_of(SIMULATE, claims=[
        {"id": "optimum", "text": "the full batch reaches -1/(n-1)", "metric": "full_neg_mean",
         "test": "close", "target": "theory_full_neg_mean", "tolerance": 1e-3}])
    content["tiers"]["quick"]["seeds"] = 2
    done = reproduce(write_recipe(tmp_path, content), out=tmp_path / "out", progress=False)
    assert len(done.rows) == 2 * len(SIMULATE["metrics"])
    assert [verdict.claim_id for verdict in done.verdicts] == ["optimum"]
    assert done.report_path.is_file() and done.report_path.parent == tmp_path / "out"
    with open(tmp_path / "out" / "results.csv") as handle:
        assert len(list(csv.DictReader(handle))) == len(done.rows)
    assert (tmp_path / "out" / "summary.csv").is_file() and done.summary


def test_the_run_record_has_the_command_machine_times_and_each_cells_steps(tmp_path, h2,
                                                                           monkeypatch):
    seen = {}
    module = sys.modules["contrastkit.experiments.reproduce"]  # the name is the function's
    real = module.run_record
    monkeypatch.setattr(module, "run_record", lambda *a, **k: seen.setdefault("info",
                                                                              real(*a, **k)))
    path = write_recipe(tmp_path, SIMULATE)
    monkeypatch.chdir(tmp_path)  # the record's paths are relative to the working folder
    reproduce(path, out=tmp_path / "out", progress=False, seeds=1)
    info = seen["info"]
    assert info["command"] == "contrastkit reproduce tiny.yaml --tier quick --out out --seeds 1"
    assert "CPU cores" in info["machine"] and info["seconds"] > 0 and info["cell_seconds"] > 0
    assert info["schedule"] == {"default": {"steps": SIMULATE["base"]["steps"], "epochs": None}}
    assert info["data"] == "free embeddings (simulation)"


@pytest.mark.slow
def test_the_command_prints_the_verdicts_and_the_report_path_then_publishes_and_regenerates(
        tmp_path, capsys, h2):
    path = write_recipe(tmp_path, PRETRAIN)
    code, out, err = run_cli([path, "--out", tmp_path / "out", "--seeds", 2], capsys)
    assert code == 0, err
    assert "falls: the variance falls with the batch size" in out
    assert f"report: {tmp_path / 'out' / 'report.md'}" in out
    assert "[4/4] finished" in err  # the sweep's progress goes to standard error
    verdicts = [line for line in out.splitlines() if "falls:" in line]

    dest = tmp_path / "docs" / "tiny-quick"
    code, printed, err = run_cli(["--publish", tmp_path / "out", dest], capsys)
    assert code == 0, err
    assert printed.startswith("published 5 files (") and f"to {dest}: results.csv" in printed
    assert f"check: contrastkit reproduce --regenerate {dest}" in printed
    assert sorted(p.name for p in dest.iterdir()) == [
        "report.md", "results.csv", "run.json", "summary.csv", "variance_vs_batch.png"]
    for name in ("report.md", "summary.csv"):
        (dest / name).unlink()
    code, printed, err = run_cli(["--regenerate", dest], capsys)
    assert code == 0, err
    assert [line for line in printed.splitlines() if "falls:" in line] == verdicts
    for name in ("report.md", "summary.csv"):  # the pretraining cells' report, byte for byte
        assert (dest / name).read_bytes() == (tmp_path / "out" / name).read_bytes()
    assert not (dest / "cells").exists()


def test_an_inconclusive_verdict_line_gives_its_minimum_detectable_effect():
    from contrastkit.commands.reproduce import _verdict_line
    from contrastkit.experiments.claims import Verdict

    line = _verdict_line(Verdict("falls", "it falls", "inconclusive", -0.01, -0.5, 0.2, 3, "",
                                 0.034))
    assert line == ("inconclusive   falls: it falls (effect -0.01, d_z -0.5, p 0.2, MDE 0.034, "
                    "n 3)")
    line = _verdict_line(Verdict("falls", "it falls", "not converged", -0.01, -0.5, 0.2, 3,
                                 ""))
    assert line.startswith("not converged  falls: it falls (effect -0.01") and "MDE" not in line
    assert "MDE" not in _verdict_line(Verdict("c", "t", "supported", 1.0, 2.0, 0.01, 3, "", 0.5))


def test_list_shows_each_recipe_with_its_tiers_and_estimates(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(recipe, "RECIPES", tmp_path)
    write_recipe(tmp_path / "papers", PRETRAIN, "table9")
    write_recipe(tmp_path / "papers", SIMULATE, "fig9")
    code, out, _ = run_cli(["--list"], capsys)
    assert code == 0
    assert out.splitlines() == [
        "papers/fig9: quick ~6 s", f"    {SIMULATE['title']}",
        "papers/table9: quick ~30 s, cpu ~5 min, paper ~100 h", f"    {PRETRAIN['title']}"]


def test_list_writes_long_estimates_in_hours_not_powers_of_ten(tmp_path, capsys,
                                                               monkeypatch):
    """Issue 39: a paper tier of 200 000 minutes read ``paper ~3.33e+03 h``."""
    monkeypatch.setattr(recipe, "RECIPES", tmp_path)
    content = content_of(PRETRAIN)
    content["tiers"]["paper"]["estimate_minutes"] = 200_000
    content["tiers"]["cpu"]["estimate_minutes"] = 32.7272
    write_recipe(tmp_path / "papers", content, "table9")
    code, out, _ = run_cli(["--list"], capsys)
    assert code == 0 and "e+" not in out
    assert out.splitlines()[0] == "papers/table9: quick ~30 s, cpu ~32.7 min, paper ~3,333 h"


def test_list_without_recipes_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(recipe, "RECIPES", tmp_path / "none")
    assert run_cli(["--list"], capsys)[:2] == (0, "no recipes are shipped\n")


def test_dry_run_checks_every_cell_and_prints_the_count_and_estimate(tmp_path, capsys):
    path = write_recipe(tmp_path, PRETRAIN)
    archives.write_cifar10_archive(tmp_path / "data")  # the dry run reads the paper tier's data
    code, out, err = run_cli([path, "--tier", "paper", "--dry-run", "--out", tmp_path / "o",
                              "--data-dir", tmp_path / "data"], capsys)
    assert (code, err) == (0, "")
    assert out == (f"6 cells (2 grid points x seeds) of {path} (paper) are valid; estimated "
                   f"100 h; nothing was run\n")
    assert not (tmp_path / "o").exists()


def test_dry_run_reports_a_bad_cell(tmp_path, capsys):
    content = content_of(PRETRAIN, grid={"loss": ["simclr", "siglip"]})
    content["base"]["temperature"] = 0.5
    code, out, err = run_cli([write_recipe(tmp_path, content), "--dry-run"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("contrastkit reproduce: error: cell loss=siglip of tiny (quick): ")
    assert len(err.splitlines()) == 1


def test_the_default_out_folder_names_the_recipe_and_tier(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_recipe(tmp_path, PRETRAIN)
    assert reproduce(path, "cpu", dry_run=True).out == Path("runs/reproduce/tiny/cpu")
    assert default_out("similarities/table1", "quick") == Path(
        "runs/reproduce/similarities-table1/quick")


def test_the_help_names_the_default_out_folder_as_it_is_made(capsys):
    """``--help``'s example of the default folder is the folder the command makes."""
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"e.g. {default_out('similarities/table1', 'quick').as_posix()})" in text


@pytest.mark.parametrize("args, message", [
    (["{recipe}", "--regenerate", "{file}"], "--regenerate runs no recipe; drop"),
    (["--all", "--publish", "a", "b"], "--publish runs no recipe; drop --all"),
    (["--regenerate", "."], "holds no run.json"),
    (["--publish", ".", "dest"], "holds no run.json"),
    (["similarities/nothing"], "recipe must be one of"),
    ([], "RECIPE is required"),
    (["{recipe}", "--jobs", "0"], "jobs must be >= 1, got 0"),
    (["{recipe}", "--seeds", "0"], "seeds must be >= 1, got 0"),
    (["{recipe}", "--out", "{file}"], "is a file; expected a folder"),
    (["{unknown}"], "unknown key 'tier' in tiers.quick"),
])
def test_bad_input_is_one_line_and_exit_status_2(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("")
    unknown = content_of(PRETRAIN)
    unknown["tiers"]["quick"]["tier"] = 1
    names = {"recipe": write_recipe(tmp_path, PRETRAIN),
             "unknown": write_recipe(tmp_path, unknown, "unknown"), "file": tmp_path / "file"}
    code, out, err = run_cli([arg.format(**names) for arg in args], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("contrastkit reproduce: error: ") and message in err
    assert not (tmp_path / "cells").exists() and not Path("runs").exists()


def test_submitit_without_the_package_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)
    code, _, err = run_cli([write_recipe(tmp_path, PRETRAIN), "--launcher", "submitit",
                            "--out", tmp_path / "out"], capsys)
    assert code == 2 and "pip install 'contrastkit[launch]'" in err
    assert not (tmp_path / "out").exists()


def test_list_shows_a_measured_tier_s_wall_time_and_how_it_was_measured(tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setattr(recipe, "RECIPES", tmp_path)
    content = content_of(PRETRAIN)
    content["tiers"]["cpu"]["measured"] = {"minutes": 38, "cores": 2, "jobs": 2}
    write_recipe(tmp_path / "papers", content, "table9")
    code, out, _ = run_cli(["--list"], capsys)
    assert code == 0
    assert out.splitlines()[0] == ("papers/table9: quick ~30 s, cpu 38 min (measured: 2 cores, "
                                   "--jobs 2), paper ~100 h")


@pytest.mark.parametrize("measured, message", [
    ({"minutes": 38, "cores": 2}, "missing required key 'jobs'"),
    ({"minutes": -1, "cores": 2, "jobs": 2}, "measured.minutes"),
    ({"minutes": 1, "cores": 2, "jobs": 2, "when": "today"}, "unknown key 'when'"),
    (38, "must be a mapping"),
])
def test_a_bad_measured_time_is_named(tmp_path, measured, message):
    content = content_of(PRETRAIN)
    content["tiers"]["cpu"]["measured"] = measured
    with pytest.raises(ValueError, match=message):
        recipe.load_recipe(write_recipe(tmp_path, content))
