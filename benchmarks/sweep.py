"""What a sweep spends besides training, and what a second job adds: cells of a real cpu tier
run by ``contrastkit reproduce`` with ``--jobs 1`` and with ``--jobs 2``.

    python -m benchmarks.sweep                 # about 30 min on 2 cores
    python -m benchmarks.sweep --cells 2       # a quicker look

Each run is a fresh ``contrastkit reproduce`` process (as a user runs it) on a copy of one
shipped recipe's cpu tier cut to its first ``--cells`` cells (one seed each), written to a
temporary folder. The two job counts alternate over ``--rounds`` rounds. Reported:

1. **Cells per hour** of each job count (cells over the call's wall time) and their ratio.
2. **Where a cell's time goes**, from each cell's result.json and convergence.json: the
   training steps (the epochs' ``epoch_seconds``), the half-way probe, the final evaluation,
   and the rest of the ``pretrain`` call (building the data, model and optimizer, the
   checkpoints, metrics and curves of each epoch): the per-cell fixed cost. Besides the cells,
   the call's own cost (process start, imports, the datasets' first load, the report) is the
   wall time less the cells' time (divided by the job count), spread over the cells: over the
   measured cells, and over the whole tier's cells (one call runs a tier, so a real run pays
   its start once for all of them).

Writes the ``sweep`` section of docs/benchmarks.md with ``--write-docs``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit.experiments.recipe import RECIPES, load_recipe

RECIPE = "similarities/table1"


def cut_recipe(name: str, cells: int, folder: Path) -> Path:
    """A copy of recipe ``name`` whose cpu tier keeps the first ``cells`` grid points of its
    first grid axis (all others at their first value) with one seed."""
    content = yaml.safe_load((RECIPES / f"{name}.yaml").read_text())
    tier = content["tiers"]["cpu"]
    grid = {**content.get("grid", {}), **tier.get("grid", {})}
    first, *others = grid
    tier["grid"] = {first: grid[first][:cells], **{axis: grid[axis][:1] for axis in others}}
    tier["seeds"] = 1
    content["claims"] = []
    path = folder / f"{name.replace('/', '-')}-cut.yaml"
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


def run_sweep(recipe: Path, jobs: int, out: Path) -> float:
    """Wall seconds of ``contrastkit reproduce recipe --tier cpu --jobs jobs``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "contrastkit", "reproduce", str(recipe), "--tier",
                    "cpu", "--jobs", str(jobs), "--out", str(out), "--no-progress"],
                   check=True, capture_output=True, env={**os.environ})
    return time.perf_counter() - start


def cell_parts(out: Path) -> list[dict]:
    """Each cell's seconds: ``train`` (steps), ``probe`` (half-way), ``evaluate``, ``other``
    (the rest of its pretrain call) and ``cell`` (the whole)."""
    parts = []
    for result_path in sorted(out.glob("cells/*/seed-*/result.json")):
        result = json.loads(result_path.read_text())
        folder = result_path.parent
        probe_path = folder / "convergence.json"
        probe = json.loads(probe_path.read_text())["seconds"] if probe_path.is_file() else 0.0
        timing = result["cell"]["timing"]
        train = result["metrics"]["train_seconds"]
        parts.append({"cell": result["seconds"], "train": train, "probe": probe,
                      "evaluate": timing["evaluate_seconds"],
                      "other": timing["pretrain_seconds"] - train - probe})
    return parts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=RECIPE)
    parser.add_argument("--cells", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    machine = machine_description()
    walls: dict[int, list[float]] = {1: [], 2: []}
    parts: list[dict] = []
    overheads: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        recipe = cut_recipe(args.recipe, args.cells, Path(folder))
        for round_ in range(args.rounds):
            for jobs in ((1, 2) if round_ % 2 == 0 else (2, 1)):
                out = Path(folder) / f"r{round_}-j{jobs}"
                wall = run_sweep(recipe, jobs, out)
                walls[jobs].append(wall)
                cells = cell_parts(out)
                parts += cells
                overheads.append((wall - sum(c["cell"] for c in cells) / jobs) / len(cells))
                print(f"round {round_}, --jobs {jobs}: {wall:.0f} s for {len(cells)} cells",
                      flush=True)
    per_hour = {jobs: 3600 * args.cells / statistics.median(values)
                for jobs, values in walls.items()}
    median = {key: statistics.median(cell[key] for cell in parts) for key in parts[0]}
    own = statistics.median(overheads)  # the call's own cost per measured cell
    fixed = median["other"] + own
    tier_cells = len(load_recipe(args.recipe).cells("cpu"))
    tier_fixed = median["other"] + own * args.cells / tier_cells
    lines = [
        f"Machine: {machine}. Command: `python -m benchmarks.sweep --recipe {args.recipe} "
        f"--cells {args.cells} --rounds {args.rounds}` (the recipe's cpu tier, its first "
        f"{args.cells} cells, one seed; medians over the rounds).", "",
        "| `--jobs` | wall time (s) | cells per hour |", "|---|---|---|",
        *(f"| {jobs} | {statistics.median(walls[jobs]):.0f} | {per_hour[jobs]:.1f} |"
          for jobs in (1, 2)), "",
        f"`--jobs 2` gives **{per_hour[2] / per_hour[1]:.2f}x** the cells per hour of "
        f"`--jobs 1` (one thread per job against two threads for the one job).", "",
        "A cell's time (median seconds over the cells of both job counts):", "",
        "| whole cell | training steps | half-way probe | final evaluation | rest of the "
        "pretrain call | the call's own cost, per cell |", "|---|---|---|---|---|---|",
        f"| {median['cell']:.1f} | {median['train']:.1f} | {median['probe']:.1f} | "
        f"{median['evaluate']:.1f} | {median['other']:.1f} | "
        f"{own:.1f} |", "",
        f"Fixed cost per cell (the rest of the pretrain call, plus the call's own cost spread "
        f"over the {args.cells} measured cells): {fixed:.1f} s, "
        f"{100 * fixed / median['cell']:.1f} % of a cell; over the whole tier's {tier_cells} "
        f"cells, which one call runs: {tier_fixed:.1f} s, "
        f"**{100 * tier_fixed / median['cell']:.1f} %** of a cell."]
    publish("sweep", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
