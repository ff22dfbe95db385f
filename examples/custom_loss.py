"""A loss of your own: written, registered, checked, then trained by name.

The loss is Wang & Isola's alignment + uniformity (Tongzhou Wang, Phillip Isola,
"Understanding Contrastive Representation Learning through Alignment and Uniformity on the
Hypersphere", ICML 2020, arXiv:2005.10242), which contrastkit does not ship:

    L = mean_i ||u_i - v_i||^2 + weight * (U(u) + U(v)) / 2,
    U(x) = log mean_{i<j} exp(-t ||x_i - x_j||^2)   (rows L2-normalized).

`@losses.register("align_uniform")` makes it a loss of the registry: `pretrain` then trains it
by name (`loss="align_uniform"`), with VRNS if asked, checkpoints, resume and the similarity
monitor. First `contrastkit.testing.check_loss` checks that it computes the same thing in every
way a run may call it: in 2 gloo processes against one process, gradcheck, a batch of one, a
NaN, bfloat16 (docs/losses.md, "Check your own loss"); from the command line, in examples/,
`contrastkit check-loss custom_loss:AlignUniform` does the same.

Arrange your images as one folder per class under DATA/train (torchvision's ImageFolder; the
classes are not used):

    DATA/train/cat/001.jpg  DATA/train/dog/002.png  ...

    python examples/custom_loss.py --data DATA --image-size 32 --epochs 30

It prints one PASS/FAIL/SKIP line per checked property, then (if none failed) trains and prints
the loss of the first and the last epoch; the run folder is RUNS/NAME.
"""

import argparse
import math
import sys

import torch
import torch.nn.functional as F

from contrastkit import losses
from contrastkit.data import load_imagefolder
from contrastkit.testing import check_loss
from contrastkit.train import PretrainConfig, pretrain


@losses.register("align_uniform")
class AlignUniform(losses.ContrastiveLoss):
    """Alignment (squared distance of positive pairs) + weight x uniformity (each view's)."""

    def __init__(self, t=2.0, weight=1.0):
        super().__init__()
        self.t, self.weight = t, weight

    def forward(self, u, v, labels=None):
        if u.ndim != 2 or u.shape != v.shape or len(u) < 2:
            raise ValueError(f"u and v must both have shape (batch >= 2, dim), got "
                             f"{tuple(u.shape)} and {tuple(v.shape)}")
        if not (torch.isfinite(u).all() and torch.isfinite(v).all()):
            raise ValueError("u and v must be finite")
        wide = torch.promote_types(u.dtype, torch.float32)  # bfloat16 computed in float32
        u, v = F.normalize(u.to(wide), dim=1), F.normalize(v.to(wide), dim=1)
        alignment = (u - v).pow(2).sum(dim=1).mean()
        return alignment + self.weight * (self.uniformity(u) + self.uniformity(v)) / 2

    def uniformity(self, x):
        """log mean over pairs i < j of exp(-t ||x_i - x_j||^2), for unit rows x."""
        first, second = torch.triu_indices(len(x), len(x), offset=1, device=x.device)
        squared = (2 - 2 * x @ x.T)[first, second]  # ||x_i - x_j||^2 of unit rows
        return torch.logsumexp(-self.t * squared, dim=0) - math.log(len(first))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder holding train/<class>/<image>")
    parser.add_argument("--image-size", type=int, default=32, help="square side (pixels)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="auto", help="auto (CUDA when there is one), cpu")
    parser.add_argument("--runs", default="runs", help="where the run folder goes")
    parser.add_argument("--name", default="my-images-align-uniform")
    args = parser.parse_args()

    try:  # a missing folder, or one without class folders of images
        train = load_imagefolder(args.data, "train", image_size=args.image_size)
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    check = check_loss(AlignUniform, world_sizes=(2,))  # prints a line per property
    if not check.passed:
        sys.exit(1)

    # the loss by its registered name; the built-in backbone and SimCLR augmentations
    try:  # a bad setting (a batch larger than the dataset, ...) or an unusable run folder
        config = PretrainConfig(name=args.name, runs_dir=args.runs, loss="align_uniform",
                                vrns=0, backbone="small_cnn_strided", optimizer="adamw",
                                base_lr=4e-3, epochs=args.epochs, batch_size=args.batch_size,
                                device=args.device, progress=False)
        result = pretrain(config, overwrite=True, dataset=train)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    first, last = result.history[0]["loss"], result.history[-1]["loss"]
    print(f"loss: first epoch {first:.4f}, last epoch {last:.4f}")
    print(f"run folder: {result.run_dir}")


if __name__ == "__main__":
    main()
