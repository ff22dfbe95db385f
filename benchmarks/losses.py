"""Loss benchmark: forward + backward time and peak memory, contrastkit against its peers.

Run ``python -m benchmarks.losses`` (the peers come from the ``bench`` extra); ``--quick`` for a
fast check that only prints, ``--help`` for sizes and threads. The full run writes the
``losses`` section of ``docs/benchmarks.md``.

Memory: each (loss, implementation, B) case runs in a fresh subprocess, so its peak is its own:
the child builds its inputs, resets the kernel's peak-RSS counter (``echo 5 >
/proc/self/clear_refs``), runs one forward + backward and reads the peak (``VmHWM``); the peak
minus the resident size just before the run is the memory the loss itself needed. (Without
``clear_refs`` it falls back to ``ru_maxrss``.)

Time: one subprocess per (loss, B) runs every implementation that fit in memory, one warm-up
call each, then ``repeats`` rounds in which each implementation runs once, or as many times as
fill ``SAMPLE_SECONDS`` when one call is shorter (the mean per call is its sample; the order
rotates).
Interleaving exposes every implementation to the same background load, so the ratio to the
floor is taken per round and its median reported, next to the median time.

Cases (``d = 128``, float32, CPU; ``B`` pairs, so SimCLR sees ``2B`` embeddings):

- contrastkit ``simclr`` / ``info_nce`` / ``siglip`` / ``supcon`` / ``dcl`` / ``dhel``: fused
  path, chunked path, and the exact reference (the paper's formula in plain autograd:
  ``losses.info_sym`` for the exp family, the label-matrix softplus for the sigmoid loss, the
  masked dense eq. 2 of the tests for SupCon); ``spectral`` and ``vrns``: the module's path and
  the formula on the ``B x B`` similarities;
- peers: lightly ``NTXentLoss`` and pytorch-metric-learning ``NTXentLoss`` (SimCLR), open_clip
  ``ClipLoss`` (InfoNCE) and ``SigLipLoss``, pytorch-metric-learning ``SupConLoss`` (SupCon, with
  ``SUPCON_CLASSES`` classes: row ``i`` of both views has class ``i mod SUPCON_CLASSES``);
- the floor: what any exact implementation must at least compute, with no reduction and no
  autograd: the similarity matrix, one exp over it, and its two backward products; for SimCLR
  SupCon and DCL, whose ``2B x 2B`` matrix is symmetric, 3/4 of it and one backward product (see
  ``_symmetric_floor``); for spectral and VRNS, which need no exp, the cheaper of the ``d x d``
  Gram matrices and the ``B x B`` similarities with their backward products
  (``_squared_similarities_floor``). No peer implements DCL, DHEL, spectral or VRNS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._report import (
    SAMPLE_SECONDS,
    add_write_docs_flag,
    backward_step,
    interleaved_times,
    publish,
)

DIM = 128
TEMPERATURE = 0.2
SIGLIP_SCALE, SIGLIP_BIAS = 10.0, -10.0
SIZES = (64, 256, 1024, 2048, 4096)
LARGE_BATCH = 32768
MEMORY_CAP_GIB = 8  # address-space cap of each child: a peer that needs more is reported as OOM
TARGET_BATCH = 2048
SUPCON_CLASSES = 100
VRNS_N = 50_000  # the dataset size of VRNS's offset -1/(n-1) (CIFAR's)


def _supcon_labels(rows):
    import torch

    return torch.arange(rows) % SUPCON_CLASSES


# ---------------------------------------------------------------- the cases (run in the child)


def _contrastkit(name, **kwargs):
    from contrastkit import losses

    if name == "siglip":
        return lambda u, v: losses.siglip(u, v, scale=SIGLIP_SCALE, bias=SIGLIP_BIAS, **kwargs)
    if name == "supcon":
        return lambda u, v: losses.supcon(u, v, _supcon_labels(len(u)), TEMPERATURE, **kwargs)
    if name == "spectral":
        return lambda u, v: losses.spectral(u, v, **kwargs)
    if name == "vrns":
        return lambda u, v: losses.vrns(u, v, n=VRNS_N, **kwargs)
    return lambda u, v: getattr(losses, name)(u, v, temperature=TEMPERATURE, **kwargs)


def _exact(name):
    import torch
    import torch.nn.functional as F

    from contrastkit import losses

    if name == "siglip":

        def siglip_formula(u, v):
            u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
            logits = SIGLIP_SCALE * u @ v.T + SIGLIP_BIAS
            labels = 2 * torch.eye(len(u)) - 1
            return F.softplus(-labels * logits).sum() / len(u)

        return siglip_formula
    if name == "supcon":
        from tests.losses._fast_reference import supcon_dense

        def supcon_formula(u, v):
            z = torch.cat([F.normalize(u, dim=1), F.normalize(v, dim=1)])
            return supcon_dense(z, _supcon_labels(len(u)).repeat(2), TEMPERATURE)

        return supcon_formula
    if name in ("spectral", "vrns"):
        return _squared_similarities_formula(name)
    c1, c2 = {"simclr": (1, 1), "info_nce": (1, 0), "dcl": (1, 1), "dhel": (0, 1)}[name]
    psi = torch.log1p if name in ("simclr", "info_nce") else torch.log
    return lambda u, v: losses.info_sym(u, v, lambda x: torch.exp(x / TEMPERATURE), psi, c1, c2)


def _squared_similarities_formula(name):
    """The spectral loss (-mean u_i.v_i + mean over i != j of (u_i.v_j)^2) or VRNS (Def. 5.7,
    the mean over i != j of (u_i.v_j + 1/(n-1))^2) from the B x B similarities in autograd."""
    import torch
    import torch.nn.functional as F

    def formula(u, v):
        u, v = F.normalize(u, dim=1), F.normalize(v, dim=1)
        similarities = u @ v.T
        off = ~torch.eye(len(u), dtype=torch.bool)
        if name == "vrns":
            return (similarities[off] + 1 / (VRNS_N - 1)).square().mean()
        return -similarities.diagonal().mean() + similarities[off].square().mean()

    return formula


def _lightly(_name):
    from lightly.loss import NTXentLoss

    loss = NTXentLoss(temperature=TEMPERATURE)
    return lambda u, v: loss(u, v)


def _pml(name):
    import torch
    from pytorch_metric_learning.losses import NTXentLoss, SupConLoss

    if name == "supcon":
        loss, labels_of = SupConLoss(temperature=TEMPERATURE), _supcon_labels
    else:
        loss, labels_of = NTXentLoss(temperature=TEMPERATURE), torch.arange
    return lambda u, v: loss(torch.cat([u, v]), labels_of(len(u)).repeat(2))


def _open_clip(name):
    import torch
    import torch.nn.functional as F
    from open_clip.loss import ClipLoss, SigLipLoss

    if name == "siglip":
        loss = SigLipLoss()
        scale, bias = torch.tensor(SIGLIP_SCALE), torch.tensor(SIGLIP_BIAS)
    else:
        loss = ClipLoss()
        scale, bias = torch.tensor(1 / TEMPERATURE), None
    # open_clip expects normalized features; contrastkit normalizes inside, so time it here too
    return lambda u, v: loss(F.normalize(u, dim=1), F.normalize(v, dim=1), scale, bias)


def _floor(name):
    import torch

    def floor(u, v):
        with torch.no_grad():
            if name in ("simclr", "supcon", "dcl"):  # [u; v] against itself: symmetric
                _symmetric_floor(torch.cat([u, v]), half=u.shape[0])
            elif name in ("spectral", "vrns"):  # no exp: sums of squared similarities
                _squared_similarities_floor(u, v)
            else:
                matrix = (u @ v.T).exp_()
                matrix @ v
                matrix.T @ u

    return floor


def _symmetric_floor(z, half):
    """The least an exact kernel computes for ``z`` against itself: the top rows and the
    bottom-right corner of ``z z^T`` (the rest is their mirror image), one exp over them, and
    one backward product's worth, ``M z`` with ``M`` read through the same blocks."""
    top, corner = (z[:half] @ z.T).exp_(), (z[half:] @ z[half:].T).exp_()
    top @ z
    top[:, half:].T @ z[:half]
    corner @ z[half:]


def _squared_similarities_floor(u, v):
    """The least an exact kernel computes for ``sum_ij (u_i.v_j)^2`` and its gradient, the
    cheaper of two ways: the ``d x d`` Gram matrices ``U^T U`` and ``V^T V`` and the backward
    products ``U (V^T V)``, ``V (U^T U)`` (``4 B d^2``), or the ``B x B`` similarities and
    their two backward products (``3 B^2 d``)."""
    batch, dim = u.shape
    if 4 * batch * dim * dim <= 3 * batch * batch * dim:
        gram_u, gram_v = u.T @ u, v.T @ v
        u @ gram_v
        v @ gram_u
    else:
        similarities = u @ v.T
        similarities @ v
        similarities.T @ u


IMPLEMENTATIONS = {
    "contrastkit": lambda name, chunk: _contrastkit(name),
    "contrastkit chunked": lambda name, chunk: _contrastkit(name, chunk_size=chunk),
    "contrastkit exact": lambda name, chunk: _exact(name),
    "lightly NTXentLoss": lambda name, chunk: _lightly(name),
    "PML NTXentLoss": lambda name, chunk: _pml(name),
    "PML SupConLoss": lambda name, chunk: _pml(name),
    "open_clip ClipLoss": lambda name, chunk: _open_clip(name),
    "open_clip SigLipLoss": lambda name, chunk: _open_clip(name),
    "floor": lambda name, chunk: _floor(name),
}

# which implementations compute which loss
LOSSES = {
    "simclr": ["floor", "contrastkit", "contrastkit chunked", "contrastkit exact",
               "lightly NTXentLoss", "PML NTXentLoss"],
    "info_nce": ["floor", "contrastkit", "contrastkit chunked", "contrastkit exact",
                 "open_clip ClipLoss"],
    "siglip": ["floor", "contrastkit", "contrastkit chunked", "contrastkit exact",
               "open_clip SigLipLoss"],
    "supcon": ["floor", "contrastkit", "contrastkit chunked", "contrastkit exact",
               "PML SupConLoss"],
    # no peer implements these four
    "dcl": ["floor", "contrastkit", "contrastkit chunked", "contrastkit exact"],
    "dhel": ["floor", "contrastkit", "contrastkit chunked", "contrastkit exact"],
    "spectral": ["floor", "contrastkit", "contrastkit exact"],
    "vrns": ["floor", "contrastkit", "contrastkit exact"],
}


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _peak_bytes(reset_worked: bool) -> int:
    if reset_worked:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_memory_case(loss: str, impl: str, batch: int, chunk: int, threads: int) -> dict:
    """One forward + backward of one case in this (fresh) process: its peak memory and value."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    step, value_of = _step(loss, impl, batch, chunk)
    before = _rss_bytes()
    reset = _reset_peak()
    start = time.perf_counter()
    value = step()
    seconds = time.perf_counter() - start
    peak = _peak_bytes(reset)
    return {
        "seconds": seconds,
        "peak_bytes": peak,
        "loss_bytes": max(peak - before, 0),
        "value": value_of(value),
    }


def run_timing(loss: str, impls: list[str], batch: int, chunk: int, repeats: int,
               threads: int) -> dict:
    """Interleaved timing of ``impls`` on one (loss, B): ``{impl: [seconds per round]}``."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    steps = {impl: _step(loss, impl, batch, chunk)[0] for impl in impls}
    for step in steps.values():
        step()
    return interleaved_times(steps, repeats, SAMPLE_SECONDS)


def _step(loss, impl, batch, chunk):
    """A closure running one forward + backward on seeded inputs, and how to read its value."""

    step = backward_step(IMPLEMENTATIONS[impl](loss, chunk), batch, DIM)
    return step, lambda value: None if value is None else float(value)


# ------------------------------------------------------------------ the driver (parent process)


def _run_child(arguments, timeout):
    command = [sys.executable, "-m", "benchmarks.losses", *arguments]

    def cap_memory():
        limit = MEMORY_CAP_GIB * 2**30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, preexec_fn=cap_memory,
            cwd=Path(__file__).resolve().parent.parent,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout > {timeout} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    text = done.stderr
    if "ModuleNotFoundError" in text:
        return {"error": "not installed"}
    if "alloc" in text.lower() or "memory" in text.lower() or done.returncode < 0:
        return {"error": f"OOM (> {MEMORY_CAP_GIB} GiB cap)"}
    return {"error": (text.strip().splitlines() or ["failed"])[-1][:80]}


def _measure(loss, batch, args):
    """Memory case per implementation, then one interleaved timing run of those that fit."""
    import statistics

    common = ["--chunk", str(args.chunk), "--threads", str(args.threads)]
    results = {}
    for impl in LOSSES[loss]:
        results[impl] = _run_child(["--memory", loss, impl, str(batch), *common], args.timeout)
    ran = [impl for impl in LOSSES[loss] if "error" not in results[impl]]
    times = _run_child(
        ["--timing", loss, ",".join(ran), str(batch), "--repeats", str(args.repeats), *common],
        args.timeout * 3,
    )
    if "error" in times:
        for impl in ran:
            results[impl] = times
        return results
    floor = times["floor"]
    for impl in ran:
        results[impl]["seconds"] = statistics.median(times[impl])
        results[impl]["ratio"] = statistics.median(
            t / f for t, f in zip(times[impl], floor, strict=True)
        )
    return results


def _versions() -> str:
    from importlib import metadata

    names = ["torch", "lightly", "pytorch-metric-learning", "open_clip_torch"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def _time_cell(result):
    if "error" in result:
        return result["error"]
    return f"{result['seconds'] * 1e3:,.1f} ({result['ratio']:.2f}x)"


def _memory_cell(result):
    return result.get("error") or _mib(result["loss_bytes"])


def _table(loss, sizes, results):
    header = "| implementation | " + " | ".join(f"B = {b}" for b in sizes) + " |"
    lines = [f"**{loss}**: fwd + bwd median ms (median per-round ratio to the floor), then the "
             "peak memory the loss needed, MiB",
             "", header, "|---" * (len(sizes) + 1) + "|"]
    for impl in LOSSES[loss]:
        cells = [_time_cell(results[loss, impl, batch]) for batch in sizes]
        lines.append(f"| {impl} | " + " | ".join(cells) + " |")
    for impl in LOSSES[loss]:
        cells = [_memory_cell(results[loss, impl, batch]) for batch in sizes]
        lines.append(f"| {impl}, peak MiB | " + " | ".join(cells) + " |")
    return "\n".join(lines)


PEERS = ("lightly NTXentLoss", "PML NTXentLoss", "PML SupConLoss", "open_clip ClipLoss",
         "open_clip SigLipLoss")
# issue 15's targets: the ratio to the floor at B = 256 and from B = 1024, and of the chunked
# path from B = 2048
SMALL_BATCH_TARGETS = {256: 2.0, 1024: 1.5}
CHUNKED_TARGET = (2048, 1.6)


def _verdict(met: bool) -> str:
    return "**met**" if met else "**not met**"


def _small_batch_targets(results, losses_measured, sizes) -> list[str]:
    """One line per loss: contrastkit against the fastest peer at every B, its ratio to the
    floor against :data:`SMALL_BATCH_TARGETS`, and the chunked path's from B = 2048."""
    lines = []
    for loss in losses_measured:
        ours = {b: results[loss, "contrastkit", b] for b in sizes}
        if any("error" in r for r in ours.values()):
            continue
        notes = []
        if any(impl in PEERS for impl in LOSSES[loss]):
            behind = []
            for batch in sizes:
                peers = [results[loss, impl, batch] for impl in LOSSES[loss] if impl in PEERS]
                fastest = min((r["seconds"] for r in peers if "error" not in r), default=None)
                if fastest is not None and ours[batch]["seconds"] > fastest:
                    behind.append(f"B = {batch} ({ours[batch]['seconds'] / fastest:.2f}x)")
            notes.append("at or below the fastest peer at every B: " + _verdict(not behind)
                         + (f" (behind at {', '.join(behind)})" if behind else ""))
        for first, target in SMALL_BATCH_TARGETS.items():
            chosen = [b for b in sizes if b == first or (first == 1024 and b > first)]
            if chosen:
                worst = max(ours[b]["ratio"] for b in chosen)
                notes.append(f"B {'=' if first == 256 else '>='} {first}: {worst:.2f}x the "
                             f"floor (target <= {target}x): {_verdict(worst <= target)}")
        first, target = CHUNKED_TARGET
        chunked = [results[loss, "contrastkit chunked", b] for b in sizes
                   if b >= first and "contrastkit chunked" in LOSSES[loss]]
        if chunked and all("error" not in r for r in chunked):
            worst = max(r["ratio"] for r in chunked)
            notes.append(f"chunked from B = {first}: {worst:.2f}x the floor (target <= "
                         f"{target}x): {_verdict(worst <= target)}")
        if notes:
            lines.append(f"- {loss}: " + "; ".join(notes) + ".")
    return lines


def _targets(results, sizes, large, losses_measured):
    lines = _small_batch_targets(results, losses_measured, sizes)
    if TARGET_BATCH in sizes and "simclr" in losses_measured:
        fast = results["simclr", "contrastkit", TARGET_BATCH]
        peers = {impl: results["simclr", impl, TARGET_BATCH]
                 for impl in ("lightly NTXentLoss", "PML NTXentLoss")}
        ran = {impl: r for impl, r in peers.items() if "error" not in r}
        ratio = fast["ratio"]
        lines.append(f"- SimCLR fwd+bwd at B = {TARGET_BATCH} is **{ratio:.2f}x the floor** "
                     f"(target <= 1.5x): **{'met' if ratio <= 1.5 else 'not met'}**.")
        if ran:
            fastest = min(ran, key=lambda impl: ran[impl]["ratio"])
            speedup = ran[fastest]["ratio"] / fast["ratio"]
            lines.append(
                f"- It is **{speedup:.2f}x faster than the fastest SimCLR peer** ({fastest}; "
                f"target >= 2x): **{'met' if speedup >= 2 else 'not met'}**."
            )
            memory = {impl: fast["loss_bytes"] / r["loss_bytes"] for impl, r in ran.items()}
            worst = max(memory.values())
            described = ", ".join(f"{m:.2f}x that of {impl}" for impl, m in memory.items())
            lines.append(f"- Its peak memory is {described} (target <= 0.5x): "
                         f"**{'met' if worst <= 0.5 else 'not met'}**.")
        failed = [f"{impl}: {r['error']}" for impl, r in peers.items() if "error" in r]
        if failed:
            lines.append(f"  Peers that could not run at B = {TARGET_BATCH}: "
                         + "; ".join(failed) + ".")
    if large is not None:
        batch, chunk, result = large
        if "error" in result:
            lines.append(f"- Chunked SimCLR at B = {batch}: {result['error']}: **not met**.")
        else:
            peak = result["peak_bytes"] / 2**30
            lines.append(
                f"- Chunked SimCLR at B = {batch} ({2 * batch} embeddings, d = {DIM}, "
                f"chunk_size = {chunk}): one fwd+bwd took {result['seconds']:.0f} s; "
                f"whole-process peak RSS **{peak:.2f} GiB** (the loss itself: "
                f"{_mib(result['loss_bytes'])} MiB; target <= 4 GiB): "
                f"**{'met' if peak <= 4 else 'not met'}**."
            )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--losses", nargs="+", choices=list(LOSSES), default=list(LOSSES),
                        help="the losses to measure (default: all)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing rounds")
    parser.add_argument("--chunk", type=int, default=512, help="chunk_size of the chunked path")
    parser.add_argument("--large-batch", type=int, default=LARGE_BATCH,
                        help="B of the chunked large-batch case (0: skip)")
    parser.add_argument("--large-chunk", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads in each case (0: torch's default, one per core)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per case")
    parser.add_argument("--quick", action="store_true",
                        help="B in {256, 1024}, 3 rounds, no large-batch case; prints only")
    add_write_docs_flag(parser)
    parser.add_argument("--memory", nargs=3, metavar=("LOSS", "IMPL", "B"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--timing", nargs=3, metavar=("LOSS", "IMPLS", "B"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory:
        loss, impl, batch = args.memory
        print(json.dumps(run_memory_case(loss, impl, int(batch), args.chunk, args.threads)))
        return
    if args.timing:
        loss, impls, batch = args.timing
        print(json.dumps(run_timing(loss, impls.split(","), int(batch), args.chunk,
                                    args.repeats, args.threads)))
        return
    if args.quick:
        args.sizes, args.repeats, args.large_batch = [256, 1024], 3, 0

    from benchmarks._report import machine_description

    results = {}
    for loss in args.losses:
        for batch in args.sizes:
            for impl, result in _measure(loss, batch, args).items():
                results[loss, impl, batch] = result
                shown = result.get("error") or (
                    f"{result['seconds'] * 1e3:.1f} ms ({result['ratio']:.2f}x floor), "
                    f"{_mib(result['loss_bytes'])} MiB, loss {result['value']}"
                )
                print(f"{loss:9s} B={batch:5d} {impl:22s} {shown}", flush=True)
    large = None
    if args.large_batch:
        result = _run_child(
            ["--memory", "simclr", "contrastkit chunked", str(args.large_batch),
             "--chunk", str(args.large_chunk), "--threads", str(args.threads)],
            max(args.timeout, 1800),
        )
        large = (args.large_batch, args.large_chunk, result)
        print(f"large batch: {result}", flush=True)

    command = "python -m benchmarks.losses " + " ".join(argv if argv is not None else sys.argv[1:])
    sections = [
        f"Machine: {machine_description()}.",
        f"Versions: {_versions()}.",
        f"Command: `{command.strip()}` (d = {DIM}, float32, CPU; temperature {TEMPERATURE}; "
        f"SigLIP scale {SIGLIP_SCALE:g}, bias {SIGLIP_BIAS:g}; chunked path chunk_size = "
        f"{args.chunk}; {args.repeats} interleaved rounds after one warm-up call, a call "
        f"repeated to fill {SAMPLE_SECONDS * 1e3:g} ms per sample; torch threads per case: "
        f"{args.threads or 'default'}).",
        "",
        "Time: one subprocess per (loss, B) runs all implementations in interleaved rounds "
        "(rotating order), so background load hits them alike; the ratio to the floor is "
        "taken within each round and its median reported. Peak memory: each case runs once in "
        "a fresh subprocess that resets the kernel's peak-RSS counter (`/proc/self/clear_refs`), "
        "runs one forward + backward and reads `VmHWM`; the figure is that peak minus the "
        "resident size just before the run (inputs, imports and interpreter excluded), i.e. "
        "the working memory of the loss, including allocator and BLAS scratch (a few MiB). "
        f"Children run under an {MEMORY_CAP_GIB} GiB address-space cap; a case that exceeds it "
        "is reported as OOM. (`tracemalloc` does not see torch's allocations, so it is not "
        "used.)",
        "",
        "**Targets**",
        "",
        _targets(results, args.sizes, large, args.losses),
        "",
    ]
    for loss in args.losses:
        sections += [_table(loss, args.sizes, results), ""]
    sections.append(
        "The floor is what any exact implementation must compute, with no reduction and no "
        "autograd: for InfoNCE and SigLIP the `B x B` similarity matrix, one `exp` over it and "
        "its two gradient products; for SimCLR and SupCon, whose `2B x 2B` matrix is symmetric, "
        "its top half and bottom-right quarter (the rest mirrors them), one `exp` over those and "
        "one gradient product (each entry serves both of its rows), which is what contrastkit's "
        "symmetric kernel computes. The exact reference is the paper's formula in plain autograd "
        "(`losses.info_sym` for the exp family; SigLIP's label-matrix softplus; SupCon's masked "
        f"eq. 2, with {SUPCON_CLASSES} classes, row i of both views in class i mod "
        f"{SUPCON_CLASSES}). All implementations agree on the loss value to float32 rounding "
        "(printed by the script)."
    )
    markdown = "\n".join(sections)
    publish("losses", markdown, args.write_docs)


if __name__ == "__main__":
    main()
