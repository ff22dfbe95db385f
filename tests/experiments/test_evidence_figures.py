"""A figure drawn from the cells' files (declared by its spec) that the folder no longer
holds is not redrawn, and the report and the command say so: it is never dropped silently,
drawn from some of its files, or left linked to an earlier drawing."""

from __future__ import annotations

import shutil

from contrastkit.cli import main
from contrastkit.experiments.reproduce import regenerate
from tests.experiments.test_evidence import HARDNEG, _fake_sweep


def test_a_figure_whose_cell_files_are_gone_is_said_not_to_be_redrawn(tmp_path, capsys):
    sweep = _fake_sweep(tmp_path / "sweep", {**HARDNEG, "figure": ["nc_curves",
                                                                   "class_mean_spectra"]},
                        tmp_path)
    drawn = (sweep / "report.md").read_text()
    assert "(nc_curves.png)" in drawn and "(class_mean_spectra.png)" in drawn
    for path in (sweep / "cells").rglob("curves.json"):
        path.unlink()
    done = regenerate(sweep)
    text = (sweep / "report.md").read_text()
    assert "(nc_curves.png)" not in text and "(class_mean_spectra.png)" in text
    assert ("- `nc_curves`: 4 of the 4 cell files it reads are missing "
            "(cells/beta=0/seed-0/curves.json, ...)") in text
    assert list(done.figures_not_drawn) == ["nc_curves"]
    # the command says so too, and that the earlier figure is left as it was, unshown
    assert main(["reproduce", "--regenerate", str(sweep)]) == 0
    printed = capsys.readouterr().out
    assert (f"not redrawn: nc_curves: 4 of the 4 cell files it reads are missing in {sweep} "
            f"(cells/beta=0/seed-0/curves.json, ...); {sweep / 'nc_curves.png'}, drawn "
            f"earlier, is left as it was and the report no longer shows it") in printed
    shutil.rmtree(sweep / "cells")  # no cell folder at all: neither figure is redrawn
    regenerate(sweep)
    text = (sweep / "report.md").read_text()
    assert "- `class_mean_spectra`: 4 of the 4 cell files it reads are missing" in text
    assert "- `nc_curves`: 4 of the 4 cell files it reads are missing" in text
    assert "](" not in text.split("## Figures")[1]


def test_a_figure_missing_one_cells_file_is_not_drawn_from_the_others(tmp_path):
    sweep = _fake_sweep(tmp_path / "sweep", {**HARDNEG, "figure": ["nc_curves"]}, tmp_path)
    (sweep / "cells" / "beta=5" / "seed-1" / "curves.json").unlink()
    done = regenerate(sweep, tmp_path / "again")
    assert not (tmp_path / "again" / "nc_curves.png").exists()
    assert done.figures_not_drawn["nc_curves"].missing == ("cells/beta=5/seed-1/curves.json",)
    assert ("- `nc_curves`: 1 of the 4 cell files it reads is missing "
            "(cells/beta=5/seed-1/curves.json)") in (tmp_path / "again" / "report.md").read_text()
