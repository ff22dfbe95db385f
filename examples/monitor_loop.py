"""Watch the similarity geometry of a SimCLR run in a plain PyTorch loop.

Trains a small CNN with SimCLR on your images and feeds the two views' embeddings to a
`contrastkit.monitor.SimilarityMonitor`. Every `--log-every` steps the monitor returns the
statistics of the window's batches (exact, no embeddings stored; see docs/monitoring.md):
the positive-pair similarity, the negatives split into same-class and different-class pairs
(the labels are only used here), and the variance of the negative similarities beside the
range Theorem 5.5 of the central paper (Lee, Lim, Lee, Sohn, ICML 2025, arXiv:2506.09781) gives
for your dataset size and batch size. It warns once of collapse or excessive separation.

Arrange your images as one folder per class under DATA/train (torchvision's ImageFolder):

    DATA/train/cat/001.jpg  DATA/train/dog/002.png  ...

    python examples/monitor_loop.py --data DATA --image-size 32 --epochs 20

It prints one line per window: the step, the window's mean loss, and the monitor's statistics.
"""

import argparse

import torch

from contrastkit import losses
from contrastkit.data import SimCLRAugment, load_imagefolder
from contrastkit.models import build_encoder
from contrastkit.monitor import SimilarityMonitor


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder holding train/<class>/<image>")
    parser.add_argument("--image-size", type=int, default=32, help="square side (pixels)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--log-every", type=int, default=10, help="steps per monitor window")
    args = parser.parse_args()

    try:  # a missing folder, or one without class folders of images
        train = load_imagefolder(args.data, "train", image_size=args.image_size)
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    loader = torch.utils.data.DataLoader(train, batch_size=args.batch_size, shuffle=True,
                                         drop_last=True)
    if len(loader) == 0 or args.epochs < 1:
        parser.exit(2, f"{parser.prog}: error: need --epochs >= 1 and --batch-size <= the "
                    f"{len(train)} images\n")
    torch.manual_seed(0)
    encoder = build_encoder("small_cnn_strided", 3, train.info.mean, train.info.std)
    augment = SimCLRAugment(size=args.image_size)  # SimCLR's recipe, on whole batches
    generator = torch.Generator().manual_seed(0)
    criterion = losses.SimCLR(temperature=0.2)
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=1e-3)
    monitor = SimilarityMonitor(n=len(train), log_every=args.log_every)

    window_losses = []
    print("step  loss    positive  neg same class  neg other class  neg var  (Thm 5.5 range)")
    for _ in range(args.epochs):
        for images, labels in loader:
            images = images.float() / 255
            u = encoder(augment(images, generator))
            v = encoder(augment(images, generator))
            loss = criterion(u, v)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            window_losses.append(loss.item())
            stats = monitor.update(u, v, labels)  # detached: changes no gradient
            if stats is not None:
                print(f"{monitor.step:4d}  {sum(window_losses) / len(window_losses):.4f}  "
                      f"{stats['positive_mean']:8.4f}  "
                      f"{stats['negative_same_class_mean']:14.4f}  "
                      f"{stats['negative_different_class_mean']:15.4f}  "
                      f"{stats['window_negative_var']:.4f}  "
                      f"({stats['theory_negative_var_low']:.1e} to "
                      f"{stats['theory_negative_var_high']:.1e})")
                window_losses = []
    print(f"warnings: {', '.join(monitor.alerts) or 'none'}")


if __name__ == "__main__":
    main()
