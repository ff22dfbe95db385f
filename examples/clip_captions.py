"""CLIP on your own image-caption pairs (a CSV or TSV file), in a plain PyTorch loop.

Trains an image tower (contrastkit's strided small CNN) and a text tower (a small transformer
over byte tokens) with CLIP's loss, InfoNCE with a learned temperature (Radford et al., ICML
2021, arXiv:2103.00020), then retrieves each test image's captions and each test caption's
image, with the untrained and the trained towers. `contrastkit pretrain task=image_text
dataset=captions data_dir=DATA` trains on the same files with checkpoints, resume and logging
(see docs/image-text.md); this script shows the pieces in a loop of your own.

DATA holds train.csv and test.csv (or .tsv, tab-separated), the format open_clip's trainer
reads: a header row, the image path in the column `filepath` (relative to DATA) and the
caption in the column `title`; rows that name the same image give it several captions:

    filepath,title
    images/0001.jpg,a dog running on the beach
    images/0001.jpg,a brown dog by the sea
    images/0002.jpg,two cups of coffee on a table

    python examples/clip_captions.py --data DATA --image-size 64 --epochs 30

It prints the loss of the first and the last epoch, and the test split's retrieval recall@1
and @5 in both directions (%) before and after training, beside chance.
"""

import argparse
import random

import torch

from contrastkit import losses
from contrastkit.data import augmentation_for, load_caption_split
from contrastkit.evaluate import chance_recalls, retrieval_recalls
from contrastkit.models import build_two_tower


@torch.no_grad()
def recalls(towers, test, texts, owner, ks):
    """Recall@k of the test split's retrieval in both directions (%), unaugmented images;
    text ``j`` is a caption of image ``owner[j]``."""
    towers.eval()
    images = towers.encode_image(test.images.float() / 255)
    found = retrieval_recalls(images, towers.encode_text(towers.tokenizer(texts)), owner, ks)
    towers.train()
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder holding train.csv and test.csv")
    parser.add_argument("--image-size", type=int, default=64, help="square side (pixels)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    try:  # a missing file or image, a missing column, an empty caption, ...
        train = load_caption_split(args.data, "train", image_size=args.image_size)
        test = load_caption_split(args.data, "test", image_size=args.image_size)
    except (OSError, ValueError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.epochs < 1 or min(args.batch_size, len(train)) < 2:
        parser.exit(2, f"{parser.prog}: error: need --epochs >= 1 and --batch-size >= 2\n")
    torch.manual_seed(0)
    towers = build_two_tower("small_cnn_strided", 3, train.info.mean, train.info.std,
                             embed_dim=64, context_length=96, text_width=64)
    criterion = losses.InfoNCE(learnable=True)  # CLIP's: temperature learned from 0.07
    optimizer = torch.optim.AdamW([*towers.parameters(), *criterion.parameters()],
                                  lr=args.lr, weight_decay=0.1)
    # crops of 80-100 %, brightness and contrast: no flip, hue or grayscale, which would
    # contradict captions that name sides and colours
    augment = augmentation_for("captions", args.image_size)
    generator, draw = torch.Generator().manual_seed(0), random.Random(0)
    texts = [text for captions in test.captions for text in captions]
    owner = [image for image, captions in enumerate(test.captions) for _ in captions]
    ks = [k for k in (1, 5) if k <= len(test)]
    before = recalls(towers, test, texts, owner, ks)

    epoch_losses = []
    for _ in range(args.epochs):
        total, batches = 0.0, 0
        for rows in torch.randperm(len(train), generator=generator).split(args.batch_size):
            if len(rows) < 2:  # a contrastive loss needs a negative
                continue
            images = augment(train.images[rows].float() / 255, generator)
            captions = [draw.choice(train.captions[row]) for row in rows.tolist()]  # one each
            loss = criterion(towers.encode_image(images),
                             towers.encode_text(towers.tokenizer(captions)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        epoch_losses.append(total / batches)
    print(f"loss: first epoch {epoch_losses[0]:.4f}, last epoch {epoch_losses[-1]:.4f}")

    after = recalls(towers, test, texts, owner, ks)
    chance = chance_recalls(owner, len(test), ks)
    print(f"retrieval on {len(test)} test images and {len(owner)} captions (recall, %):")
    for key in after:
        print(f"  {key:18} untrained {before[key]:5.1f}, trained {after[key]:5.1f}, "
              f"chance {chance[key]:5.1f}")


if __name__ == "__main__":
    main()
