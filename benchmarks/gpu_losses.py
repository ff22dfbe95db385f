"""GPU loss benchmark: forward + backward time and peak memory of contrastkit's losses against
their peers and the floor, on one CUDA device, in float32 and bfloat16.

Run ``python -m benchmarks.gpu_losses --out runs/gpu-losses`` on a CUDA machine (``--quick``
for B in {256, 1024, 4096}, about a minute; ``--sizes`` for others; ``--write-docs`` also writes
the ``gpu_losses`` section of docs/benchmarks.md). It writes ``gpu_losses.md`` (the tables) and
``gpu_losses.json`` (every timing) to ``--out``. ``--device cpu`` runs the same code on the CPU
(``--quick``: tiny sizes), which is how the tests check it.

Cases (``d = 512``, ``B`` pairs, so SimCLR sees ``2B`` embeddings; temperature 0.1, SigLIP's
scale 10 and bias -10):

- ``info_nce`` against open_clip ``ClipLoss``, ``siglip`` against open_clip ``SigLipLoss``,
  ``simclr`` against pytorch-metric-learning ``NTXentLoss`` and lightly ``NTXentLoss``; the
  peers are optional imports (a missing one reads "not installed"), given normalized rows as
  they expect (the normalization is timed with them: contrastkit normalizes inside);
- contrastkit again with the Triton passes of its unchunked kernels switched off
  (``contrastkit, eager kernels``): what they gain, and what a GPU without Triton gets;
- the floor (``benchmarks.losses``): the similarity product, one exp over it and its two
  backward products, at that B and dtype, no autograd; for SimCLR, whose ``2B x 2B`` matrix is
  symmetric, three quarters of it and one backward product.

Method: everything runs in this one process. For each (loss, dtype, B) every implementation
first runs ``--warmup`` untimed calls, then one more alone for its peak memory
(``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, minus the memory
allocated before: its inputs excluded), then ``--repeats`` rounds in which each implementation
runs once, the order rotated from round to round (ours and the peers alternate, so that clocks
and background load hit them alike). Each call is timed by CUDA events (wall clock on the CPU); the
table gives the median and the ratios of the medians. An implementation that runs out of memory
reads "OOM" and the benchmark goes on.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks._report import add_write_docs_flag, machine_description, publish
from benchmarks.losses import IMPLEMENTATIONS as CPU_BENCHMARK

DIM = 512
SIZES = (256, 1024, 4096, 16384, 65536)
QUICK_SIZES = {"cuda": (256, 1024, 4096), "cpu": (16, 64)}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
TEMPERATURE = 0.1
SIGLIP_SCALE, SIGLIP_BIAS = 10.0, -10.0
NOT_INSTALLED, OOM = "not installed", "OOM"
# from B = 4096 contrastkit should be within this ratio of the floor (issue 35's target)
FLOOR_TARGET, FLOOR_TARGET_FROM = 1.5, 4096

Step = Callable[[torch.Tensor, torch.Tensor], torch.Tensor | None]
EAGER = "contrastkit, eager kernels"


# ---------------------------------------------------------------------- the implementations


def _contrastkit(loss: str) -> Step:
    from contrastkit import losses

    if loss == "siglip":
        return lambda u, v: losses.siglip(u, v, SIGLIP_SCALE, SIGLIP_BIAS)
    return lambda u, v: getattr(losses, loss)(u, v, TEMPERATURE)


def _contrastkit_eager(loss: str) -> Step:
    """contrastkit with its unchunked kernels in eager operators only (``triton_passes``
    switched off for the call): what the Triton passes gain, and what a GPU without Triton
    gets."""
    from contrastkit.losses.kernels import triton_passes

    step = _contrastkit(loss)

    def eager(u, v):
        triton_passes.ENABLED = False
        try:
            return step(u, v)
        finally:
            triton_passes.ENABLED = True

    return eager


def _open_clip(loss: str) -> Step:
    from open_clip.loss import ClipLoss, SigLipLoss

    if loss == "siglip":
        module = SigLipLoss()

        def siglip(u, v):
            scale = torch.tensor(SIGLIP_SCALE, device=u.device)
            bias = torch.tensor(SIGLIP_BIAS, device=u.device)
            return module(F.normalize(u, dim=1), F.normalize(v, dim=1), scale, bias)

        return siglip
    module = ClipLoss()

    def clip(u, v):
        scale = torch.tensor(1 / TEMPERATURE, device=u.device)
        return module(F.normalize(u, dim=1), F.normalize(v, dim=1), scale)

    return clip


def _pml(loss: str) -> Step:
    from pytorch_metric_learning.losses import NTXentLoss

    module = NTXentLoss(temperature=TEMPERATURE)

    def ntxent(u, v):
        labels = torch.arange(len(u), device=u.device)
        return module(torch.cat([u, v]), torch.cat([labels, labels]))

    return ntxent


def _lightly(loss: str) -> Step:
    from lightly.loss import NTXentLoss

    module = NTXentLoss(temperature=TEMPERATURE)
    return lambda u, v: module(u, v)


def _floor(loss: str) -> Step:
    return CPU_BENCHMARK["floor"](loss, None)


IMPLEMENTATIONS: dict[str, Callable[[str], Step]] = {
    "contrastkit": _contrastkit,
    EAGER: _contrastkit_eager,
    "open_clip ClipLoss": _open_clip,
    "open_clip SigLipLoss": _open_clip,
    "PML NTXentLoss": _pml,
    "lightly NTXentLoss": _lightly,
    "floor": _floor,
}
LOSSES = {
    "info_nce": ["contrastkit", EAGER, "open_clip ClipLoss", "floor"],
    "siglip": ["contrastkit", EAGER, "open_clip SigLipLoss", "floor"],
    "simclr": ["contrastkit", EAGER, "PML NTXentLoss", "lightly NTXentLoss", "floor"],
}
PEERS = ("open_clip ClipLoss", "open_clip SigLipLoss", "PML NTXentLoss", "lightly NTXentLoss")


# ---------------------------------------------------------------------------- the measuring


class Clock:
    """Times a call by CUDA events on a GPU, by the wall clock on the CPU; measures the peak
    memory a call allocates on a GPU (``None`` on the CPU)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"

    def start(self):
        if self.cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            return begin, end
        return time.perf_counter()

    def stop(self, started) -> Callable[[], float]:
        """A function that gives the call's milliseconds (read after :meth:`synchronize`)."""
        if self.cuda:
            begin, end = started
            end.record()
            return lambda: begin.elapsed_time(end)
        elapsed = (time.perf_counter() - started) * 1e3
        return lambda: elapsed

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def peak_bytes(self, call: Callable[[], object]) -> tuple[object, int | None]:
        """``call()`` and the memory it allocates at its peak beyond what was allocated
        before (``None`` on the CPU)."""
        if not self.cuda:
            return call(), None
        self.synchronize()
        torch.cuda.reset_peak_memory_stats(self.device)
        before = torch.cuda.memory_allocated(self.device)
        value = call()
        self.synchronize()
        return value, torch.cuda.max_memory_allocated(self.device) - before


def _inputs(batch: int, dim: int, dtype: torch.dtype, device: torch.device):
    generator = torch.Generator().manual_seed(batch)
    u = torch.randn(batch, dim, generator=generator).to(device=device, dtype=dtype)
    v = torch.randn(batch, dim, generator=generator).to(device=device, dtype=dtype)
    return u.requires_grad_(), v.requires_grad_()


def _step(fn: Step, u: torch.Tensor, v: torch.Tensor) -> Callable[[], torch.Tensor | None]:
    def step():
        value = fn(u, v)
        if value is not None:  # the floor builds no graph
            value.backward()
            u.grad = v.grad = None
        return value

    return step


def _free(clock: Clock, u: torch.Tensor, v: torch.Tensor) -> None:
    u.grad = v.grad = None
    gc.collect()
    if clock.cuda:
        torch.cuda.empty_cache()


def _build(impl: str, loss: str) -> Step | str:
    try:
        return IMPLEMENTATIONS[impl](loss)
    except ImportError:
        return NOT_INSTALLED


def _guarded(impl: str, clock: Clock, u, v, call: Callable[[], object]) -> tuple[object, str]:
    """``(call(), "")``, or ``(None, why)`` when it runs out of memory or, for a peer, fails
    otherwise (an API of another version): the benchmark goes on without it."""
    try:
        return call(), ""
    except torch.OutOfMemoryError:
        _free(clock, u, v)
        return None, OOM
    except Exception as error:  # noqa: BLE001  (a peer's failure; ours raises)
        if impl not in PEERS:
            raise
        _free(clock, u, v)
        return None, f"failed: {type(error).__name__}"


def measure(loss: str, dtype: torch.dtype, batch: int, args, clock: Clock) -> dict[str, dict]:
    """``{implementation: {"times_ms": [...], "ms": median, "peak_bytes": ..., "value": ...}}``,
    or ``{"error": "not installed" | "OOM" | "failed: ..."}`` for one that could not run."""
    results: dict[str, dict] = {}
    steps: dict[str, Callable[[], object]] = {}
    u, v = _inputs(batch, args.dim, dtype, clock.device)
    for impl in LOSSES[loss]:
        fn = _build(impl, loss)
        if isinstance(fn, str):
            results[impl] = {"error": fn}
            continue
        step = _step(fn, u, v)

        def first_calls(step=step):
            for _ in range(args.warmup):  # first: one-time allocations are not the loss's
                step()
            value, peak = clock.peak_bytes(step)
            return None if value is None else float(value.detach()), peak

        measured, error = _guarded(impl, clock, u, v, first_calls)
        if error:
            results[impl] = {"error": error}
            continue
        value, peak = measured
        results[impl] = {"peak_bytes": peak, "value": value, "times": []}
        steps[impl] = step
    order = list(steps)
    for round_ in range(args.repeats):
        shift = round_ % max(len(order), 1)
        for impl in order[shift:] + order[:shift]:
            if "error" in results[impl]:
                continue
            started = clock.start()
            _, error = _guarded(impl, clock, u, v, steps[impl])
            if error:
                results[impl] = {"error": error}
            else:
                results[impl]["times"].append(clock.stop(started))
    clock.synchronize()
    for result in results.values():
        if "times" in result:
            result["times_ms"] = [read() for read in result.pop("times")]
            result["ms"] = statistics.median(result["times_ms"])
    return results


# ------------------------------------------------------------------------------ the report


def _cell(result: dict) -> str:
    if "error" in result:
        return result["error"]
    memory = ("" if result["peak_bytes"] is None
              else f", {result['peak_bytes'] / 2**20:,.0f} MiB")
    return f"{result['ms']:,.2f} ms{memory}"


def _ratio(ours: dict, other: dict) -> str:
    if "error" in ours or "error" in other:
        return other.get("error") or ours["error"]
    return f"{ours['ms'] / other['ms']:.2f}x"


def table(loss: str, dtype: str, sizes, results) -> str:
    """One loss in one dtype: each implementation's median time and peak memory per B, then
    contrastkit's ratio to each peer and to the floor."""
    header = "| | " + " | ".join(f"B = {b}" for b in sizes) + " |"
    lines = [f"**{loss}, {dtype}**", "", header, "|---" * (len(sizes) + 1) + "|"]
    for impl in LOSSES[loss]:
        cells = [_cell(results[loss, dtype, b][impl]) for b in sizes]
        lines.append(f"| {impl} | " + " | ".join(cells) + " |")
    for impl in LOSSES[loss][1:]:
        cells = [_ratio(results[loss, dtype, b]["contrastkit"], results[loss, dtype, b][impl])
                 for b in sizes]
        lines.append(f"| contrastkit / {impl} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(measured, dtypes, sizes, results) -> list[str]:
    """Per loss and dtype: contrastkit at or below the fastest peer at every B, and within
    :data:`FLOOR_TARGET` of the floor from :data:`FLOOR_TARGET_FROM`."""
    lines = []
    for loss in measured:
        for dtype in dtypes:
            behind, far, against_peers, against_floor = [], [], 0, 0
            for batch in sizes:
                row = results[loss, dtype, batch]
                ours = row["contrastkit"]
                if "error" in ours:  # ours did not run (out of memory): a miss of both
                    against_peers += 1
                    behind.append(f"B = {batch} ({ours['error']})")
                    if batch >= FLOOR_TARGET_FROM:
                        against_floor += 1
                        far.append(f"B = {batch} ({ours['error']})")
                    continue
                peers = [row[impl]["ms"] for impl in LOSSES[loss] if impl in PEERS
                         and "error" not in row[impl]]
                if peers:
                    against_peers += 1
                    if ours["ms"] > min(peers):
                        behind.append(f"B = {batch} ({ours['ms'] / min(peers):.2f}x)")
                floor = row["floor"]
                if batch >= FLOOR_TARGET_FROM and "error" not in floor:
                    against_floor += 1
                    if ours["ms"] > FLOOR_TARGET * floor["ms"]:
                        far.append(f"B = {batch} ({ours['ms'] / floor['ms']:.2f}x)")
            verdict = ("at or below the fastest peer: "
                       + _verdict(against_peers, behind, "no peer ran"))
            verdict += (f"; within {FLOOR_TARGET}x of the floor from B = {FLOOR_TARGET_FROM}: "
                        + _verdict(against_floor, far, f"no B >= {FLOOR_TARGET_FROM}"))
            lines.append(f"- {loss}, {dtype}: {verdict}.")
    return lines


def _verdict(compared: int, missed: list[str], why_not: str) -> str:
    if not compared:
        return f"not measured ({why_not})"
    return "**met**" if not missed else "**not met** at " + ", ".join(missed)


def _versions() -> str:
    from importlib import metadata

    found = []
    for name in ("torch", "open_clip_torch", "pytorch-metric-learning", "lightly"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} {NOT_INSTALLED}")
    return ", ".join(found)


def _machine(device: torch.device) -> str:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return (f"{props.name} ({props.total_memory / 2**30:.0f} GiB), CUDA "
                f"{torch.version.cuda}; host: {machine_description()}")
    return machine_description()


def report(args, sizes, results, command: str, machine: str | None = None,
           versions: str | None = None) -> str:
    timer = "CUDA events" if args.device == "cuda" else "the wall clock (CPU)"
    sections = [
        f"Machine: {machine or _machine(torch.device(args.device))}.",
        f"Versions: {versions or _versions()}.",
        f"Command: `{command}` (d = {args.dim}; temperature {TEMPERATURE}, SigLIP scale "
        f"{SIGLIP_SCALE:g} and bias {SIGLIP_BIAS:g}; forward + backward, median of "
        f"{args.repeats} interleaved rounds after {args.warmup} warm-up calls and one for the "
        f"peak memory, timed by "
        f"{timer}; peak memory beyond the inputs, on a GPU).",
        "",
        "**Targets**",
        "",
        *targets(args.losses, args.dtypes, sizes, results),
        "",
    ]
    for loss in args.losses:
        for dtype in args.dtypes:
            sections += [table(loss, dtype, sizes, results), ""]
    return "\n".join(sections)


def report_from(path: Path, args) -> str:
    """The report of the run recorded in ``path`` (a ``gpu_losses.json``)."""
    recorded = json.loads(path.read_text())
    results: dict[tuple, dict] = {}
    for entry in recorded["results"]:
        key = entry["loss"], entry["dtype"], entry["batch"]
        results.setdefault(key, {})[entry["implementation"]] = entry
    args.losses = list(dict.fromkeys(loss for loss, _, _ in results))
    args.dtypes = list(dict.fromkeys(dtype for _, dtype, _ in results))
    args.dim, args.repeats, args.device = recorded["dim"], recorded["repeats"], recorded["device"]
    args.warmup = recorded["warmup"]
    sizes = sorted({batch for _, _, batch in results})
    return report(args, sizes, results, recorded["command"],
                  machine=recorded["machine"], versions=recorded["versions"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-losses"),
                        help="folder for gpu_losses.md and gpu_losses.json")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--sizes", type=int, nargs="+", help=f"B (default {list(SIZES)})")
    parser.add_argument("--dtypes", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    parser.add_argument("--losses", nargs="+", choices=list(LOSSES), default=list(LOSSES))
    parser.add_argument("--dim", type=int, default=DIM)
    parser.add_argument("--repeats", type=int, default=15, help="interleaved timed rounds")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls before the rounds")
    parser.add_argument("--quick", action="store_true",
                        help=f"B in {QUICK_SIZES['cuda']} on a GPU (about a minute), "
                        f"{QUICK_SIZES['cpu']} on the CPU, with 3 rounds there")
    parser.add_argument("--report-from", type=Path, metavar="JSON",
                        help="measure nothing: write the report of an earlier run's "
                        "gpu_losses.json (its machine, versions and command)")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    if args.report_from:
        publish("gpu_losses", report_from(args.report_from, args), args.write_docs)
        return
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.exit(2, "benchmarks.gpu_losses: no CUDA device; pass --device cpu\n")
    sizes = args.sizes or (QUICK_SIZES[args.device] if args.quick else SIZES)
    if args.quick and args.device == "cpu":
        args.repeats, args.warmup = min(args.repeats, 3), min(args.warmup, 1)
    clock = Clock(torch.device(args.device))
    results = {}
    for loss in args.losses:
        for dtype in args.dtypes:
            for batch in sizes:
                row = measure(loss, DTYPES[dtype], batch, args, clock)
                results[loss, dtype, batch] = row
                shown = ", ".join(f"{impl}: {_cell(result)}" for impl, result in row.items())
                print(f"{loss} {dtype} B={batch}: {shown}", flush=True)
    command = "python -m benchmarks.gpu_losses " + " ".join(
        argv if argv is not None else sys.argv[1:])
    markdown = report(args, sizes, results, command.strip())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_losses.md").write_text(markdown + "\n")
    raw = [{"loss": loss, "dtype": dtype, "batch": batch, "implementation": impl, **result}
           for (loss, dtype, batch), row in results.items() for impl, result in row.items()]
    (args.out / "gpu_losses.json").write_text(json.dumps(
        {"device": args.device, "machine": _machine(torch.device(args.device)),
         "versions": _versions(), "dim": args.dim, "repeats": args.repeats,
         "warmup": args.warmup, "command": command.strip(), "results": raw}, indent=1) + "\n")
    publish("gpu_losses", markdown, args.write_docs)


if __name__ == "__main__":
    main()
