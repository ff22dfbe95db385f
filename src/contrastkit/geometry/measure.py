"""Measuring a model's embedding geometry with the paper's Table 1 protocol.

Table 1 of the central paper: take 5 000 training images, augment each twice to get 5 000
positive pairs, embed them at the projector output, and report the statistics of the
similarities of all negative pairs among them. The authors' code does not contain this script
(github.com/leechungpa/embedding-similarity-cl), so the protocol is spelled out here: ``n_pairs``
distinct images drawn without replacement with a fixed seed, two independent draws of
``augment`` from one seeded generator, the encoder in eval mode without gradients, and
population variances over all ordered pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any

import torch

from contrastkit.dtypes import full_float32
from contrastkit.typing import Augment, Embedder, Samples

from .alignment import alignment, uniformity, uniformity_approximation
from .similarity_stats import SimilarityStats, similarity_stats


@dataclass(frozen=True)
class Measurement:
    """The geometry of ``n_pairs`` positive pairs of a model (Table 1 protocol).

    ``alignment`` is Wang & Isola's (``alpha = 2``); ``uniformity`` theirs (``t = 2``) averaged
    over the two views, as in their training loss; ``uniformity_eq5`` is the paper's
    eq. (5) (``t = 1``) from the negative-pair mean and variance.
    """

    stats: SimilarityStats
    alignment: float
    uniformity: float
    uniformity_eq5: float
    n_pairs: int
    seed: int

    def as_dict(self) -> dict[str, Any]:
        """One flat dict (e.g. a line of a metrics log)."""
        return {
            "n_pairs": self.n_pairs,
            "seed": self.seed,
            "alignment": self.alignment,
            "uniformity": self.uniformity,
            "uniformity_eq5": self.uniformity_eq5,
            **self.stats.as_dict(),
        }


def measure_embeddings(
    encoder: Embedder,
    dataset: Samples,
    augment: Augment,
    n_pairs: int | None = 5000,
    seed: int = 0,
    *,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Embed two augmentations of ``n_pairs`` training images: ``(u, v, labels)``.

    Args:
        encoder: maps images ``(B, C, H, W)`` to embeddings ``(B, d)`` (the projector output).
            An ``nn.Module`` is put in eval mode for the measurement and restored after.
        dataset: ``dataset[i]`` is an image tensor ``(C, H, W)`` or a tuple whose first element
            is one (``(image, label)``: the labels are returned too).
        augment: ``augment(images, generator)`` returns augmented ``(B, C, H, W)`` images; it
            receives the images on the encoder's device and a CPU ``torch.Generator`` (the
            training loop's convention: random parameters are drawn on the CPU, so a seed
            gives the same augmentations on any device, and applied on the images' device).
        n_pairs: number of distinct images (``None``: the whole dataset).
        seed: seeds the choice of images and the augmentations, so repeated calls (e.g. once
            per epoch) measure the same pairs under the same augmentations.
        batch_size: images per forward pass.
        device: where to run; default the encoder's parameters' device (CPU if none).

    Returns:
        ``u, v`` float32 ``(n_pairs, d)`` on the CPU, and the int64 labels or None.
    """
    size = len(dataset)
    if n_pairs is None:
        n_pairs = size
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, Integral) or not 2 <= n_pairs <= size:
        raise ValueError(
            f"n_pairs must be an integer in [2, len(dataset) = {size}], got {n_pairs!r}"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, Integral) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    device = torch.device(device) if device is not None else _device_of(encoder)
    index_generator = torch.Generator().manual_seed(seed)
    indices = torch.randperm(size, generator=index_generator)[:n_pairs].tolist()
    augment_generator = torch.Generator().manual_seed(seed)  # draws on the CPU, as in training

    was_training = getattr(encoder, "training", None)
    if was_training is not None:
        encoder.eval()
    views: tuple[list[torch.Tensor], list[torch.Tensor]] = ([], [])
    labels: list[int] = []
    try:
        with torch.no_grad(), full_float32():  # no TF32: a GPU measures what a CPU does
            for start in range(0, n_pairs, batch_size):
                images, batch_labels = _load(dataset, indices[start : start + batch_size])
                images = images.to(device)
                for view in views:
                    view.append(_embed(encoder, augment(images, augment_generator), images))
                if batch_labels is not None:
                    labels.extend(batch_labels)
    finally:
        if was_training:
            encoder.train()
    u, v = torch.cat(views[0]), torch.cat(views[1])
    return u, v, torch.tensor(labels, dtype=torch.int64) if len(labels) == n_pairs else None


def measure(
    encoder: Embedder,
    dataset: Samples,
    augment: Augment,
    n_pairs: int | None = 5000,
    seed: int = 0,
    *,
    use_labels: bool = True,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> Measurement:
    """Similarity statistics, alignment and uniformity of a model (the paper's Table 1 protocol).

    See :func:`measure_embeddings` for the arguments. With ``use_labels`` and a labelled
    dataset, the statistics also split negatives into same-class and different-class pairs.
    Table 1 reports ``measure(...).stats.negative_var``.
    """
    u, v, labels = measure_embeddings(
        encoder, dataset, augment, n_pairs, seed, batch_size=batch_size, device=device
    )
    stats = similarity_stats(u, v, labels if use_labels else None)
    return Measurement(
        stats=stats,
        alignment=alignment(u, v),
        uniformity=(uniformity(u) + uniformity(v)) / 2,
        uniformity_eq5=uniformity_approximation(stats.negative_mean, stats.negative_var),
        n_pairs=u.shape[0],
        seed=seed,
    )


class SimilarityMonitor:
    """A per-epoch callback: ``monitor(encoder, epoch)`` runs :func:`measure` and logs it.

    Every call uses the same images and augmentations (fixed ``seed``), so changes across
    epochs come from the model. Calls at epochs not divisible by ``every`` are skipped.

    Example::

        monitor = SimilarityMonitor(train_set, augment, n_pairs=5000, every=10)
        for epoch in range(epochs):
            train_one_epoch(model)
            row = monitor(model.projected, epoch)   # dict or None
        monitor.history                             # list of the logged dicts
    """

    def __init__(
        self,
        dataset: Samples,
        augment: Augment,
        n_pairs: int | None = 5000,
        seed: int = 0,
        *,
        every: int = 1,
        use_labels: bool = True,
        batch_size: int = 256,
        device: torch.device | str | None = None,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, Integral) or every < 1:
            raise ValueError(f"every must be an integer >= 1, got {every!r}")
        self.dataset: Samples = dataset
        self.augment: Augment = augment
        self.n_pairs: int | None = n_pairs
        self.seed: int = seed
        self.every: int = int(every)
        self.use_labels: bool = use_labels
        self.batch_size: int = batch_size
        self.device: torch.device | str | None = device
        self.history: list[dict[str, Any]] = []

    def __call__(self, encoder: Embedder, epoch: int | None = None) -> dict[str, Any] | None:
        if epoch is not None and epoch % self.every != 0:
            return None
        result = measure(
            encoder,
            self.dataset,
            self.augment,
            self.n_pairs,
            self.seed,
            use_labels=self.use_labels,
            batch_size=self.batch_size,
            device=self.device,
        )
        row = {"epoch": epoch, **result.as_dict()}
        self.history.append(row)
        return row


def _device_of(encoder: Embedder) -> torch.device:
    parameters = getattr(encoder, "parameters", None)
    if parameters is not None:
        for parameter in parameters():
            return parameter.device
    return torch.device("cpu")


def _load(dataset: Samples, indices: list[int]) -> tuple[torch.Tensor, list[int] | None]:
    images, labels = [], []
    for index in indices:
        item = dataset[index]
        if isinstance(item, (tuple, list)):
            image = item[0]
            label = item[1] if len(item) > 1 else None
        else:
            image, label = item, None
        if not isinstance(image, torch.Tensor) or image.dim() != 3:
            raise ValueError(
                "dataset items must be an image tensor (C, H, W) or a tuple starting with one; "
                f"item {index} holds {type(image).__name__}"
                + (f" of shape {tuple(image.shape)}" if isinstance(image, torch.Tensor) else "")
            )
        images.append(image)
        labels.append(int(label) if label is not None and _is_label(label) else None)
    known = [label for label in labels if label is not None]
    return torch.stack(images), (known if len(known) == len(labels) else None)


def _is_label(value: object) -> bool:
    if isinstance(value, torch.Tensor):
        return value.numel() == 1 and not value.is_floating_point()
    return isinstance(value, Integral) and not isinstance(value, bool)


def _embed(encoder: Embedder, augmented: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
    if not isinstance(augmented, torch.Tensor) or augmented.shape[0] != images.shape[0]:
        raise ValueError(
            "augment(images, generator) must return a tensor with one row per image, got "
            f"{type(augmented).__name__}"
            + (f" of shape {tuple(augmented.shape)}" if isinstance(augmented, torch.Tensor) else "")
        )
    embeddings = encoder(augmented)
    if not isinstance(embeddings, torch.Tensor) or embeddings.dim() != 2:
        raise ValueError(
            "encoder(images) must return embeddings of shape (batch, dim), got "
            + (str(tuple(embeddings.shape)) if isinstance(embeddings, torch.Tensor) else
               type(embeddings).__name__)
        )
    return embeddings.detach().float().cpu()
