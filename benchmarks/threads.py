"""Threads that do not fight: the main job and a quick sweep, on an idle machine and beside a
second CPU-bound process, with OpenMP's old default wait (threads spin before they sleep) and
with contrastkit's passive wait (:mod:`contrastkit.threads`), in alternating rounds.

    python -m benchmarks.threads              # about 20 min on 2 cores
    python -m benchmarks.threads --quick      # a fast look; prints only

Each command runs as a fresh process, as a user runs it, in three settings: "spin" is the
wait libgomp chooses when nothing is set (spin about 300 000 times, then sleep), obtained by
``GOMP_SPINCOUNT=300000``, which the command line respects as the user's choice; "passive" is
the command line's own wait (``OMP_WAIT_POLICY=PASSIVE``); "every core" sets
``OMP_NUM_THREADS`` to the machine's core count (PyTorch's default), and "the free cores" sets
nothing, so that a run takes the cores other processes leave free when it starts
(:func:`contrastkit.threads.chosen_threads`), contrastkit's default. "Busy" runs the command while a
single-threaded Python loop keeps one core busy for the whole command (a stand-in for a test
run, a second sweep or a browser). The figures are each command's wall time and, for the main
job, its training time (the epochs' ``epoch_seconds``, from metrics.jsonl), median over the
rounds; the order of the four cases rotates from round to round. Writes the ``threads``
section of docs/benchmarks.md with ``--write-docs``.
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

from benchmarks._report import add_write_docs_flag, machine_description, publish

_CORES = str(os.cpu_count() or 1)
POLICIES = {"spin, every core (libgomp's default)": {"GOMP_SPINCOUNT": "300000",
                                                     "OMP_NUM_THREADS": _CORES},
            "passive, every core": {"OMP_NUM_THREADS": _CORES},
            "passive, the free cores (contrastkit's default)": {}}
CLEARED = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "OMP_NUM_THREADS",
           "MKL_NUM_THREADS")
SPINNER = "while True: pass"


def main_job(folder: Path, epochs: int) -> list[str]:
    return ["contrastkit", "pretrain", f"epochs={epochs}", f"runs_dir={folder}", "name=job",
            "progress=false"]


def quick_sweep(folder: Path) -> list[str]:
    return ["contrastkit", "reproduce", "similarities/table1", "--tier", "quick", "--out",
            str(folder / "sweep"), "--no-progress"]


def run_case(command: list[str], policy: dict[str, str], busy: bool, folder: Path
             ) -> tuple[float, float | None]:
    """Wall seconds of ``command`` (in ``folder``, with ``policy``'s variables, beside a
    spinning process when ``busy``) and the training seconds of its run folder, if any."""
    environ = {key: value for key, value in os.environ.items() if key not in CLEARED}
    environ.update(policy)
    spinner = subprocess.Popen([sys.executable, "-c", SPINNER]) if busy else None
    try:
        time.sleep(0.2 if busy else 0)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=environ, cwd=folder)
        wall = time.perf_counter() - start
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    metrics = folder / "job" / "metrics.jsonl"
    training = None
    if metrics.is_file():
        training = sum(json.loads(line)["epoch_seconds"]
                       for line in metrics.read_text().splitlines())
    return wall, training


def measure(scenarios: dict[str, callable], rounds: int) -> dict:
    """``{(scenario, policy, load): [(wall, training), ...]}`` over ``rounds`` rounds, the
    cases of each scenario interleaved, their order rotated every round."""
    cases = [(policy, busy) for policy in POLICIES for busy in (False, True)]
    found = {}
    for name, command_of in scenarios.items():
        for round_ in range(rounds):
            shift = round_ % len(cases)
            for policy, busy in cases[shift:] + cases[:shift]:
                with tempfile.TemporaryDirectory() as folder:
                    result = run_case(command_of(Path(folder)), POLICIES[policy], busy,
                                      Path(folder))
                found.setdefault((name, policy, busy), []).append(result)
                print(f"  {name}, {policy}, {'busy' if busy else 'idle'}: "
                      f"{result[0]:.1f} s", file=sys.stderr, flush=True)
    return found


def table(found: dict, scenarios: list[str], rounds: int) -> str:
    lines = ["| command | threads | idle (s) | busy (s) | busy / idle |",
             "|---|---|---|---|---|"]
    for name in scenarios:
        for policy in POLICIES:
            for index, what in ((0, "wall"), (1, "training")):
                values = [statistics.median(v[index] for v in found[(name, policy, busy)])
                          if found[(name, policy, busy)][0][index] is not None else None
                          for busy in (False, True)]
                if values[0] is None:
                    continue
                lines.append(f"| {name} ({what}) | {policy} | {values[0]:.1f} | "
                             f"{values[1]:.1f} | {values[1] / values[0]:.2f}x |")
    return "\n".join(lines) + f"\n\nMedians over {rounds} rounds."


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=10,
                        help="epochs of the main job (the README's runs 50; 10 show the same "
                             "per-epoch pace, and the spinning case is slow)")
    parser.add_argument("--quick", action="store_true",
                        help="one round, a 5-epoch main job, no sweep; prints only")
    parser.add_argument("--no-sweep", action="store_true",
                        help="the main job alone (the sweep takes most of the time)")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    epochs, rounds = (5, 1) if args.quick else (args.epochs, args.rounds)
    scenarios = {f"`contrastkit pretrain epochs={epochs}`": lambda f: main_job(f, epochs)}
    if not (args.quick or args.no_sweep):
        scenarios["`contrastkit reproduce similarities/table1` (quick tier)"] = quick_sweep
    machine = machine_description()
    found = measure(scenarios, rounds)
    markdown = "\n\n".join([
        f"Machine: {machine}. Command: `python -m benchmarks.threads --epochs {epochs} "
        f"--rounds {rounds}{' --no-sweep' if args.no_sweep else ''}`.",
        table(found, list(scenarios), rounds)])
    publish("threads", markdown, args.write_docs and not args.quick)


if __name__ == "__main__":
    main()
