"""SimCLR + VRNS on your own folder of images, then kNN on held-out images.

Pretrains contrastkit's small CNN (or --backbone) with SimCLR (temperature 0.2) plus 30 x
VRNS, the central paper's Table 1 objective (Lee, Lim, Lee, Sohn, ICML 2025, arXiv:2506.09781),
on the images of DATA/train with `contrastkit.train.pretrain` (AdamW, which forgives a small
dataset's few steps more than the paper's SGD), then classifies the images of DATA/val by their
nearest neighbours in DATA/train (cosine kNN on the backbone's features), with the untrained
and the trained encoder.

Arrange your images as one folder per class, as torchvision's ImageFolder reads them
(`contrastkit pretrain dataset=imagefolder data_dir=DATA` reads the same layout):

    DATA/train/cat/001.jpg  DATA/train/dog/002.png  ...
    DATA/val/cat/101.jpg    DATA/val/dog/102.png    ...

    python examples/simclr_vrns_images.py --data DATA --image-size 64 --epochs 100

The labels are only used by the kNN evaluation; training sees the images alone. It prints the
loss of the first and the last epoch and the kNN top-1 accuracy on DATA/val before and after
training; the run folder (config, metrics.jsonl, checkpoints, curves.png) is RUNS/NAME.
"""

import argparse
import copy

import torch

from contrastkit.data import load_imagefolder
from contrastkit.evaluate import extract_features, knn_accuracy
from contrastkit.models import build_encoder
from contrastkit.train import PretrainConfig, pretrain


def knn_top1(encoder, train, val, k):
    """kNN top-1 (%) of DATA/val against DATA/train, on the encoder's backbone features."""
    device = next(encoder.parameters()).device
    train_features, train_labels = extract_features(encoder, train, device=device)
    val_features, val_labels = extract_features(encoder, val, device=device)
    return knn_accuracy(train_features, train_labels, val_features, val_labels,
                        num_classes=train.info.num_classes, k=k)["top1"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder holding train/ and val/")
    parser.add_argument("--image-size", type=int, default=32, help="square side (pixels)")
    parser.add_argument("--backbone", default="small_cnn",
                        help="small_cnn, small_cnn_strided (4x faster), resnet18, resnet50")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--base-lr", type=float, default=4e-3, help="AdamW's, per 256 images")
    parser.add_argument("--vrns", type=float, default=30.0, help="VRNS weight (0: off)")
    parser.add_argument("--knn-k", type=int, default=20)
    parser.add_argument("--device", default="auto", help="auto (CUDA when there is one), cpu")
    parser.add_argument("--runs", default="runs", help="where the run folder goes")
    parser.add_argument("--name", default="my-images-simclr-vrns")
    args = parser.parse_args()

    try:  # a missing folder, or one without class folders of images
        train = load_imagefolder(args.data, "train", image_size=args.image_size)
        val = load_imagefolder(args.data, "val", image_size=args.image_size)
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    torch.manual_seed(0)
    # a backbone + projector, normalized with ImageNet's channel statistics
    encoder = build_encoder(args.backbone, 3, train.info.mean, train.info.std)
    untrained = copy.deepcopy(encoder)

    # SimCLR's augmentations at the image size are the default for square uint8 images;
    # VRNS's n is the number of training images
    try:  # a bad setting (a batch larger than the dataset, ...) or an unusable run folder
        config = PretrainConfig(name=args.name, runs_dir=args.runs, loss="simclr",
                                temperature=0.2, vrns=args.vrns, epochs=args.epochs,
                                batch_size=args.batch_size, optimizer="adamw",
                                base_lr=args.base_lr, device=args.device, progress=False)
        result = pretrain(config, overwrite=True, encoder=encoder, dataset=train)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")

    first, last = result.history[0]["loss"], result.history[-1]["loss"]
    print(f"loss: first epoch {first:.4f}, last epoch {last:.4f}")
    before = knn_top1(untrained, train, val, args.knn_k)
    after = knn_top1(result.encoder, train, val, args.knn_k)
    print(f"kNN top-1 on {len(val)} val images: untrained {before:.1f} %, trained {after:.1f} %")
    print(f"run folder: {result.run_dir}")


if __name__ == "__main__":
    main()
