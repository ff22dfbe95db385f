"""A large contrastive batch in the memory of a small one: gradient caching in your own loop.

Trains a small CNN with SimCLR + 30 x VRNS (the central paper's Table 1 objective, Lee, Lim,
Lee, Sohn, ICML 2025, arXiv:2506.09781) at a batch of --batch-size images, but embeds only
--chunk-size of them at a time: `contrastkit.train.grad_cache.grad_cache` embeds every chunk
without a graph, computes the loss of the whole batch and its gradient with respect to the
embeddings, then re-embeds each chunk with a graph and back-propagates its rows' gradient
(Gao et al., RepL4NLP 2021, arXiv:2101.06983). Every row sees the negatives of the whole batch,
which gradient accumulation cannot give. BatchNorm sees chunk statistics; see
docs/grad-cache.md (and `contrastkit pretrain grad_cache_chunk=64` for the trainer).

Arrange your images as one folder per class under DATA/train (torchvision's ImageFolder; the
classes are not used):

    DATA/train/cat/001.jpg  DATA/train/dog/002.png  ...

    python examples/grad_cache.py --data DATA --batch-size 1024 --chunk-size 64

It prints the mean loss of the first and the last epoch, and the batch and chunk sizes.
"""

import argparse

import torch

from contrastkit import losses
from contrastkit.data import SimCLRAugment, load_imagefolder
from contrastkit.models import build_encoder
from contrastkit.train.grad_cache import grad_cache


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder holding train/<class>/<image>")
    parser.add_argument("--image-size", type=int, default=32, help="square side (pixels)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=1024, help="rows the loss sees")
    parser.add_argument("--chunk-size", type=int, default=64, help="rows embedded at a time")
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
    augment = SimCLRAugment(size=args.image_size)
    generator = torch.Generator().manual_seed(0)
    criterion = losses.SimCLR(temperature=0.2) + 30 * losses.VRNS(n=len(train))
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=1e-3)

    epoch_losses = []
    for _ in range(args.epochs):
        step_losses = []
        for images, _labels in loader:
            images = images.float() / 255
            view1, view2 = augment(images, generator), augment(images, generator)
            optimizer.zero_grad()
            # the gradient of the whole batch's loss, accumulated in .grad chunk by chunk
            output = grad_cache(encoder, criterion, view1, view2, chunk_size=args.chunk_size)
            optimizer.step()
            step_losses.append(output.total.item())
        epoch_losses.append(sum(step_losses) / len(step_losses))
    parts = ", ".join(f"{name} {float(value):.4f}" for name, value in output.parts.items())
    print(f"batch {args.batch_size} in chunks of {args.chunk_size}, optimizer steps per epoch: "
          f"{len(loader)}; the last step's parts: {parts}")
    print(f"loss: first epoch {epoch_losses[0]:.4f}, last epoch {epoch_losses[-1]:.4f}")


if __name__ == "__main__":
    main()
