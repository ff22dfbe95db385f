"""``contrastkit pretrain`` against a bare PyTorch loop that trains the same model with the same
augmentation, loss and optimizer: the price of everything the trainer adds (the similarity
monitor, the finiteness check, progress, metrics, checkpoints, the run folder).

    python -m benchmarks.step_floor            # about 8 min on 2 cores
    python -m benchmarks.step_floor --quick    # a fast look; prints only

The bare loop is written here from the same parts (``build_encoder``, the dataset's
``SimCLRAugment`` drawn from one seeded generator, the config's loss from the registry, SGD
with momentum and weight decay, the warm-up and cosine schedule), with nothing else: per step,
two views, the embeddings, the loss, backward, the optimizer step. Both train the same
``epochs`` in the same process, in alternating rounds (the order swapped each round); the
figure is images per second over the whole training, from the first step to the end of the
last epoch (the trainer's checkpoints, metrics and curves included; the set-up before the
first step excluded from both). Writes the ``step_floor`` section of docs/benchmarks.md with
``--write-docs``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from benchmarks._report import add_write_docs_flag, machine_description, publish
from contrastkit.data import augmentation_for, load_dataset, pretrain_split
from contrastkit.models import build_encoder
from contrastkit.train import PretrainConfig, build_loss, pretrain
from contrastkit.train.optim import build_scheduler

#: (label, config overrides): the README's main job and the cpu tiers' MNIST-5k workload.
WORKLOADS = (
    ("digits, small CNN, batch 64, SimCLR + 30 VRNS (the main job)", {}),
    ("MNIST-5k, strided small CNN, batch 128, SimCLR", {"dataset": "mnist5k",
                                                         "backbone": "small_cnn_strided",
                                                         "batch_size": 128, "vrns": 0.0}),
)


def bare_loop(config: PretrainConfig) -> float:
    """Train ``config``'s model with nothing but the step; images per second."""
    torch.manual_seed(config.seed)
    dataset = load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir)
    info = dataset.info
    images = torch.stack([dataset[i][0] for i in range(len(dataset))])
    encoder = build_encoder(config.backbone, info.channels, info.mean, info.std,
                            config.projector_hidden, config.projector_out)
    augment = augmentation_for(config.dataset, info.image_size)
    loss_fn = build_loss(config, len(dataset))
    steps_per_epoch = len(dataset) // config.batch_size
    optimizer = torch.optim.SGD(encoder.parameters(), lr=config.lr, momentum=config.momentum,
                                weight_decay=config.weight_decay)
    scheduler = build_scheduler(optimizer, config.warmup_steps(steps_per_epoch),
                                config.epochs * steps_per_epoch)
    generator = torch.Generator().manual_seed(config.seed)
    encoder.train()
    start = time.perf_counter()
    for _ in range(config.epochs):
        order = torch.randperm(len(dataset), generator=generator)
        for step in range(steps_per_epoch):
            batch = images[order[step * config.batch_size:(step + 1) * config.batch_size]]
            batch = batch.float().div_(255)
            views = [augment.apply(batch, augment.sample(config.batch_size, generator))
                     for _ in range(2)]
            loss = loss_fn(encoder(views[0]), encoder(views[1]))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
    return config.epochs * steps_per_epoch * config.batch_size / (time.perf_counter() - start)


def contrastkit_loop(config: PretrainConfig) -> tuple[float, float]:
    """``pretrain(config)``; images per second from its first step to the end of its run
    (each epoch's training time plus what follows it: checkpoint, metrics, curves), and over
    its steps alone (the median epoch's ``images_per_s``, what the progress line shows)."""
    ends = []
    done = pretrain(config, callbacks=[lambda completed, metrics: ends.append(
        (time.perf_counter(), metrics["epoch_seconds"]))])
    first_step = ends[0][0] - ends[0][1]  # epoch 1's callback follows its training and save
    end = time.perf_counter()
    size = len(load_dataset(config.dataset, pretrain_split(config.dataset), config.data_dir))
    images = len(done.history) * (size // config.batch_size) * config.batch_size
    steps = statistics.median(epoch["images_per_s"] for epoch in done.history)
    return images / (end - first_step), steps


def measure(rounds: int, epochs: int) -> list[dict]:
    rows = []
    for label, overrides in WORKLOADS:
        bare, ours, steps = [], [], []
        for round_ in range(rounds):
            with tempfile.TemporaryDirectory() as folder:
                config = PretrainConfig().with_overrides(
                    {**overrides, "epochs": epochs, "runs_dir": folder, "name": "run",
                     "progress": False, "device": "cpu"})
                order = [bare_loop, contrastkit_loop]
                for loop in order if round_ % 2 == 0 else order[::-1]:
                    if loop is bare_loop:
                        bare.append(loop(config))
                    else:
                        whole, stepping = loop(config)
                        ours.append(whole)
                        steps.append(stepping)
        rows.append({"workload": label, "bare": statistics.median(bare),
                     "contrastkit": statistics.median(ours), "steps": statistics.median(steps)})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="one round of 2 epochs")
    add_write_docs_flag(parser)
    args = parser.parse_args(argv)
    rounds, epochs = (1, 2) if args.quick else (args.rounds, args.epochs)
    machine = machine_description()
    rows = measure(rounds, epochs)
    lines = [f"Machine: {machine}. Command: `python -m benchmarks.step_floor --rounds {rounds} "
             f"--epochs {epochs}` (medians over the rounds).", "",
             "| workload | bare PyTorch loop (images/s) | pretrain, its steps (images/s) | "
             "pretrain, whole run (images/s) | steps / bare | whole run / bare |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['workload']} | {row['bare']:.0f} | {row['steps']:.0f} | "
                     f"{row['contrastkit']:.0f} | {row['steps'] / row['bare']:.2f} | "
                     f"{row['contrastkit'] / row['bare']:.2f} |")
    lines += ["", "Its steps: the images per second that pretrain reports for its epochs (the "
                  "step, the similarity monitor, the finiteness check, progress); whole run: "
                  "from its first step to its end, with each epoch's checkpoint and metrics and "
                  "the curves drawn at the end."]
    publish("step_floor", "\n".join(lines), args.write_docs and not args.quick)


if __name__ == "__main__":
    main()
