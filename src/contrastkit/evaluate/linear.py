"""The linear probe of the paper's App. D, on precomputed frozen features.

Features are L2-normalized; a linear classifier is trained with SGD (lr 0.1, momentum 0.9,
no weight decay, batch 256, cosine decay) and cross-entropy. Training on precomputed features
is exact for a frozen backbone evaluated without augmentation, and fast.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from contrastkit.rows import unit_rows

from .metrics import topk_accuracy

EpochCallback = Callable[[int, float], None]


def train_linear_classifier(features: torch.Tensor, labels: torch.Tensor, num_classes: int,
                            epochs: int = 100, lr: float = 0.1, batch_size: int = 256,
                            momentum: float = 0.9, seed: int = 0,
                            on_epoch: EpochCallback | None = None) -> torch.nn.Linear:
    """A ``Linear(d, num_classes)`` fitted to L2-normalized ``features``; after each epoch,
    ``on_epoch(epoch, mean_loss)`` when given (the epoch's mean training cross-entropy)."""
    if features.ndim != 2 or features.shape[0] != labels.shape[0]:
        raise ValueError(f"features must be (N, d) with N = len(labels) = {labels.shape[0]}, "
                         f"got {tuple(features.shape)}")
    if epochs < 1 or batch_size < 1 or not lr > 0:
        raise ValueError(f"epochs, batch_size and lr must be positive, got {epochs}, "
                         f"{batch_size}, {lr}")
    generator = torch.Generator().manual_seed(seed)
    inputs = unit_rows(features.float())
    classifier = torch.nn.Linear(inputs.shape[1], num_classes)
    with torch.no_grad():
        bound = inputs.shape[1] ** -0.5
        classifier.weight.uniform_(-bound, bound, generator=generator)
        classifier.bias.zero_()
    optimizer = torch.optim.SGD(classifier.parameters(), lr=lr, momentum=momentum,
                                weight_decay=0.0)
    steps_per_epoch = -(-inputs.shape[0] // batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs * steps_per_epoch)
    for epoch in range(epochs):
        order = torch.randperm(inputs.shape[0], generator=generator)
        loss_sum = torch.zeros(())
        for start in range(0, inputs.shape[0], batch_size):
            batch = order[start:start + batch_size]
            loss = F.cross_entropy(classifier(inputs[batch]), labels[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            loss_sum += loss.detach() * len(batch)
        if on_epoch is not None:
            on_epoch(epoch, loss_sum.item() / inputs.shape[0])
    return classifier


def linear_probe(train_features, train_labels, test_features, test_labels, num_classes: int,
                 epochs: int = 100, lr: float = 0.1, batch_size: int = 256,
                 seed: int = 0, on_epoch: EpochCallback | None = None) -> dict[str, float]:
    """Top-1 and top-5 test accuracy (in %) of a linear classifier trained on frozen,
    L2-normalized training features (``on_epoch`` as in :func:`train_linear_classifier`)."""
    classifier = train_linear_classifier(train_features, train_labels, num_classes, epochs, lr,
                                         batch_size, seed=seed, on_epoch=on_epoch)
    with torch.no_grad():
        scores = classifier(unit_rows(test_features.float()))
    return topk_accuracy(scores, test_labels)
