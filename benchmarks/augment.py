"""The SimCLR augmentation: contrastkit's batched one against kornia's and torchvision's.

    python -m benchmarks.augment             # about 2 min
    python -m benchmarks.augment --quick     # a fast check; prints only

Writes the ``augment`` section of docs/benchmarks.md with ``--write-docs``.

Three implementations of one recipe, the CIFAR one (:func:`contrastkit.data.augmentation_for`:
random resized crop and flip, color jitter with probability 0.8, grayscale with probability
0.2), with each image's own random parameters:

- contrastkit's :class:`~contrastkit.data.SimCLRAugment`: parameters drawn for the batch, then
  a few batched tensor operations;
- kornia's ``AugmentationSequential`` (batched, per-image parameters), the peer built for this;
- torchvision's v2 transforms called per image on ``uint8`` tensors, as a DataLoader's workers
  would (called on a batch, v2 draws one set of parameters for all its images: not SimCLR).

**Speed**: images/s on one CPU thread, the three interleaved in each of ``--repeats`` rounds.

**Output distribution**: the same natural images (32x32 patches of scikit-learn's two bundled
photographs) augmented ``--draws`` times by each implementation; per output image, its mean
intensity, its contrast (standard deviation of the intensity) and its saturation (mean over
pixels of the standard deviation across channels). Each implementation is compared with
torchvision's, the SimCLR paper's pipeline, by the two-sample Kolmogorov-Smirnov statistic of
each of the three; the same statistic between two torchvision runs of other seeds is the floor
that sampling noise alone reaches.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit.data import SimCLRAugment, augmentation_for

SIZE = 32
STATISTICS = ("mean intensity", "contrast", "saturation")


def natural_patches(count: int, seed: int) -> torch.Tensor:
    """``count`` uint8 ``(3, 32, 32)`` images: random 96x96 patches of scikit-learn's bundled
    photographs (no download), downsampled with antialiasing."""
    from sklearn.datasets import load_sample_images

    photos = [torch.from_numpy(np.array(image)).permute(2, 0, 1)
              for image in load_sample_images().images]
    generator = torch.Generator().manual_seed(seed)
    patches = []
    for index in range(count):
        photo = photos[index % len(photos)]
        top = int(torch.randint(photo.shape[1] - 96, (), generator=generator))
        left = int(torch.randint(photo.shape[2] - 96, (), generator=generator))
        patches.append(photo[:, top:top + 96, left:left + 96])
    batch = torch.stack(patches).float()
    small = F.interpolate(batch, size=(SIZE, SIZE), mode="bilinear", antialias=True)
    return small.round().clamp(0, 255).to(torch.uint8)


def implementations(recipe: SimCLRAugment) -> dict:
    """Each implementation as ``augment(uint8 batch, seed) -> float batch in [0, 1]``."""
    import kornia.augmentation as K
    from torchvision.transforms import v2

    kornia_pipeline = K.AugmentationSequential(
        K.RandomResizedCrop((recipe.size, recipe.size), scale=recipe.crop_scale,
                            ratio=recipe.crop_ratio),
        K.RandomHorizontalFlip(p=recipe.flip_p),
        K.ColorJitter(recipe.brightness, recipe.contrast, recipe.saturation, recipe.hue,
                      p=recipe.jitter_p),
        K.RandomGrayscale(p=recipe.grayscale_p))
    per_image = v2.Compose([
        v2.RandomResizedCrop(recipe.size, scale=recipe.crop_scale, ratio=recipe.crop_ratio,
                             antialias=True),
        v2.RandomHorizontalFlip(p=recipe.flip_p),
        v2.RandomApply([v2.ColorJitter(recipe.brightness, recipe.contrast, recipe.saturation,
                                       recipe.hue)], p=recipe.jitter_p),
        v2.RandomGrayscale(p=recipe.grayscale_p),
        v2.ToDtype(torch.float32, scale=True)])

    def ours(images, seed):
        return recipe(images.float() / 255, torch.Generator().manual_seed(seed))

    def kornia(images, seed):
        torch.manual_seed(seed)  # kornia draws from torch's global generator
        return kornia_pipeline(images.float() / 255)

    def torchvision(images, seed):
        torch.manual_seed(seed)
        return torch.stack([per_image(image) for image in images])

    return {"contrastkit (batched)": ours, "kornia (batched)": kornia,
            "torchvision v2 (per image)": torchvision}


def throughput(augments: dict, images: torch.Tensor, repeats: int) -> dict[str, float]:
    """Median images/s of each implementation, interleaved in ``repeats`` rounds (one warm-up
    call each first)."""
    times = {name: [] for name in augments}
    for augment in augments.values():
        augment(images, 0)
    for round_ in range(repeats):
        for name, augment in augments.items():
            start = time.perf_counter()
            augment(images, round_ + 1)
            times[name].append(time.perf_counter() - start)
    return {name: images.shape[0] / statistics.median(seconds) for name, seconds in times.items()}


def image_statistics(views: torch.Tensor) -> dict[str, np.ndarray]:
    """Per image: mean intensity, contrast and saturation (see the module docstring)."""
    intensity = views.mean(dim=1)
    return {"mean intensity": intensity.mean(dim=(1, 2)).numpy(),
            "contrast": intensity.std(dim=(1, 2)).numpy(),
            "saturation": views.std(dim=1).mean(dim=(1, 2)).numpy()}


def drawn_statistics(augment, images: torch.Tensor, draws: int, first_seed: int) -> dict:
    views = torch.cat([augment(images, first_seed + draw) for draw in range(draws)])
    return image_statistics(views.clamp(0, 1))


def distribution_distances(augments: dict, images: torch.Tensor, draws: int
                           ) -> dict[str, dict[str, float]]:
    """KS statistic of each statistic between each implementation and torchvision, and
    between two torchvision runs (``"floor"``)."""
    from scipy.stats import ks_2samp

    reference_name = "torchvision v2 (per image)"
    reference = drawn_statistics(augments[reference_name], images, draws, 10_000)
    others = {name: drawn_statistics(augment, images, draws, 20_000)
              for name, augment in augments.items()}
    others["floor"] = others.pop(reference_name)
    return {name: {key: float(ks_2samp(found[key], reference[key]).statistic)
                   for key in STATISTICS} for name, found in others.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=9, help="interleaved timing rounds")
    parser.add_argument("--draws", type=int, default=8, help="augmentations of each image")
    parser.add_argument("--quick", action="store_true", help="small sizes; prints only")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    if args.quick and args.write_docs:
        parser.error("--quick only prints; run without it to write the docs")
    batch, repeats, draws = (64, 3, 2) if args.quick else (args.batch, args.repeats, args.draws)
    torch.set_num_threads(1)
    augments = implementations(augmentation_for("cifar10", SIZE))
    speed = throughput(augments, natural_patches(batch, seed=0), repeats)
    print("images/s", speed, flush=True)
    distances = distribution_distances(augments, natural_patches(batch, seed=1), draws)
    print("KS", distances, flush=True)
    ours = speed["contrastkit (batched)"]
    lines = [f"Machine: {machine_description()}.", "",
             f"Command: `python -m benchmarks.augment{' --quick' if args.quick else ''}` "
             f"({batch} images of 32x32, {repeats} rounds; {draws} draws of each image for "
             f"the distributions).", "",
             "| implementation | images/s (1 thread) | contrastkit's speed relative to it | "
             + " | ".join(f"KS to torchvision: {key}" for key in STATISTICS) + " |",
             "|---|---|---|" + "---|" * len(STATISTICS)]
    for name, rate in speed.items():
        found = distances["floor" if name.startswith("torchvision") else name]
        label = f"{name}, vs another seed of itself" if name.startswith("torchvision") else name
        lines.append(f"| {label} | {rate:.0f} | {ours / rate:.1f}x | "
                     + " | ".join(f"{found[key]:.3f}" for key in STATISTICS) + " |")
    publish("augment", "\n".join(lines), args.write_docs)


if __name__ == "__main__":
    main()
