"""Watch the similarity geometry of a SimCLR run in a PyTorch Lightning `Trainer`.

The Lightning twin of monitor_loop.py: a `LightningModule` trains a small CNN with SimCLR on
your images, its `training_step` returns the two views' embeddings beside the loss, and
`contrastkit.integrations.lightning.SimilarityMonitorCallback` feeds them to a
`SimilarityMonitor` and sends each window's statistics (`similarity/positive_mean`, ...) to
the trainer's loggers, here a CSVLogger (see docs/monitoring.md). Needs
`pip install 'contrastkit[lightning]'`.

Arrange your images as one folder per class under DATA/train (torchvision's ImageFolder):

    DATA/train/cat/001.jpg  DATA/train/dog/002.png  ...

    python examples/monitor_lightning.py --data DATA --image-size 32 --epochs 20

It prints the mean loss of the first and the last epoch, the last window's statistics, and
the CSV file the windows were logged to (under --logs).
"""

import argparse

import lightning.pytorch as pl
import torch

from contrastkit import losses
from contrastkit.data import SimCLRAugment, load_imagefolder
from contrastkit.integrations.lightning import SimilarityMonitorCallback
from contrastkit.models import build_encoder
from contrastkit.monitor import SimilarityMonitor


class SimCLRModule(pl.LightningModule):
    """SimCLR on two augmented views of each batch; records each epoch's mean loss."""

    def __init__(self, encoder, image_size):
        super().__init__()
        self.encoder = encoder
        self.augment = SimCLRAugment(size=image_size)
        self.generator = torch.Generator().manual_seed(0)  # the views' random parameters
        self.criterion = losses.SimCLR(temperature=0.2)
        self.epoch_losses, self.step_losses = [], []

    def training_step(self, batch, batch_idx):
        images, labels = batch
        images = images.float() / 255
        u = self.encoder(self.augment(images, self.generator))
        v = self.encoder(self.augment(images, self.generator))
        loss = self.criterion(u, v)
        self.step_losses.append(loss.item())
        # the callback reads "u", "v" and (optionally) "labels"
        return {"loss": loss, "u": u, "v": v, "labels": labels}

    def on_train_epoch_end(self):
        self.epoch_losses.append(sum(self.step_losses) / len(self.step_losses))
        self.step_losses = []

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder holding train/<class>/<image>")
    parser.add_argument("--image-size", type=int, default=32, help="square side (pixels)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--log-every", type=int, default=10, help="steps per monitor window")
    parser.add_argument("--logs", default="logs", help="where the CSVLogger writes")
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
    pl.seed_everything(0, verbose=False)
    encoder = build_encoder("small_cnn_strided", 3, train.info.mean, train.info.std)
    module = SimCLRModule(encoder, args.image_size)
    callback = SimilarityMonitorCallback(SimilarityMonitor(n=len(train),
                                                           log_every=args.log_every))
    logger = pl.loggers.CSVLogger(args.logs)
    trainer = pl.Trainer(max_epochs=args.epochs, logger=logger, callbacks=[callback],
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    trainer.fit(module, loader)

    print(f"loss: first epoch {module.epoch_losses[0]:.4f}, "
          f"last epoch {module.epoch_losses[-1]:.4f}")
    print(f"last window, at step {trainer.global_step}: " + ", ".join(
        f"{key} {callback.last[key]:.4f}" for key in
        ("positive_mean", "negative_same_class_mean", "negative_different_class_mean",
         "window_negative_var", "theory_negative_var_high")))
    print(f"monitor windows logged to {logger.log_dir}/metrics.csv")


if __name__ == "__main__":
    main()
