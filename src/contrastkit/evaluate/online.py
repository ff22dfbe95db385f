"""Online evaluation while training: :class:`OnlineProbe`, a linear probe and a kNN measured at
the end of each epoch, for one pass of the frozen encoder over the two splits
(``pretrain online_probe=true``, and the Lightning callback ``OnlineProbeCallback``).

At each call (an epoch's end) the probe

1. takes the frozen encoder's features (the backbone's, ``encoder.features``, or the output of
   an encoder without that method), in eval mode and without augmentation, of a labeled
   training split and of a held-out split (:func:`~.features.extract_features`, as the
   offline probes);
2. trains its **linear head** one more pass over the training features: a ``Linear(d, C)``
   which lives from epoch to epoch (it starts at zero and follows the encoder), with its own
   SGD (the offline SGD probe's settings: lr 0.1, momentum 0.9, no weight decay, batches of
   256, here at a constant lr), in an order drawn from its own generator, seeded by ``(seed,
   epochs probed)``. The head reads the features standardized by the training features' own
   per-dimension mean and variance (as MAE's linear probe, a BatchNorm without affine before
   the head), whatever their scale: on the digits one pass over standardized features takes
   a fresh head to 95 % where one over L2-normalized rows (the offline probe's input) reaches
   19 %, ten passes 98 % against 88 % (``benchmarks/online_probe.py``);
3. scores the held-out split: the head's top-1 (``online_linear_top1``) and the weighted kNN's
   against the training features as its bank (``online_knn_top1``; k = 200, temperature 0.1:
   :func:`~.knn.knn_scores`, chunked), in percent.

The probe never touches the training: the encoder's gradients are not involved (features are
taken under ``no_grad``), BatchNorm's running statistics stay as they are (eval mode), and it
consumes no random number of the run: its head starts at zero, its order comes from its own
generator, and the loading of its data (a DataLoader draws a seed from torch's global
generator) runs under ``torch.random.fork_rng``. A run's weights are therefore bit for bit the
same with and without it. Its state (the head, its optimizer and the epochs probed) is
:meth:`OnlineProbe.state_dict`, which a checkpoint carries, so a resumed run continues it.
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Subset

from contrastkit.checks.scalars import check_count, check_positive
from contrastkit.data.seeding import derived_generator
from contrastkit.train.progress import ONLINE_ACCURACIES
from contrastkit.typing import Samples

from .features import extract_features
from .knn import knn_scores
from .metrics import topk_accuracy

#: The training examples the probe reads at most (its kNN's bank, its head's data): beyond it, a
#: fixed subset drawn from the probe's seed, so that on a large dataset each epoch's probe costs
#: about this many forwards plus the held-out split's (CIFAR-10: 10 000 of 50 000, with the
#: 10 000 test images about 7 % of an epoch's forwards and backwards of two views), not a pass
#: over the whole training split.
MAX_TRAIN = 10_000
#: The head's SGD: the offline SGD probe's settings (App. D), at a constant lr.
HEAD_LR, HEAD_MOMENTUM, HEAD_BATCH = 0.1, 0.9, 256
#: Added to each feature's variance before the head's standardization divides by its root (as
#: BatchNorm's eps): a feature constant over the training split stays 0.
STANDARDIZE_EPS = 1e-5
#: What an epoch's metrics call the probe's accuracies (in percent).
LINEAR_KEY, KNN_KEY = ONLINE_ACCURACIES


class OnlineProbe:
    """A linear head and a kNN scored on ``test`` at each epoch's end (see the module's notes).

    Args:
        train: a labeled dataset of ``(x, label)`` (the kNN's bank and the head's data); rows
            labeled -1 (none) are left out.
        test: the held-out dataset of ``(x, label)`` it is scored on.
        num_classes: the number of classes (labels lie in ``[0, num_classes)``).
        seed: seeds the order of the head's batches.
        knn_k, knn_temperature: the kNN's neighbours (capped at the bank's size) and
            temperature.
        num_workers: DataLoader workers for the features.
        max_train: the training examples read at most (:data:`MAX_TRAIN`; ``None``: all);
            beyond it a fixed subset drawn from ``seed``, whose kNN then differs from the
            offline kNN over the whole split.

    The features, the head and the kNN live on the device of the encoder's parameters.
    """

    def __init__(self, train: Samples, test: Samples, num_classes: int, *, seed: int = 0,
                 knn_k: int = 200, knn_temperature: float = 0.1, num_workers: int = 0,
                 max_train: int | None = MAX_TRAIN) -> None:
        train = _labeled(train, "train")
        if max_train is not None and len(train) > check_count("max_train", max_train, 1):
            # a key no count of epochs probed reaches: the bank's draw is not an epoch's order
            kept = torch.randperm(len(train), generator=derived_generator(seed, 2**31 - 1))
            # any map-style dataset, which torch's annotation narrows to a Dataset
            train = Subset(cast("Dataset[Any]", train), kept[:max_train].sort().values.tolist())
        self.train, self.test = train, _labeled(test, "test")
        self.num_classes = check_count("num_classes", num_classes, 1)
        self.seed = seed
        self.knn_k = check_count("knn_k", knn_k, 1)
        self.knn_temperature = check_positive("knn_temperature", knn_temperature)
        self.num_workers = check_count("num_workers", num_workers, 0)
        self.head: torch.nn.Linear | None = None  # made at the first call, as wide as the features
        self.optimizer: torch.optim.SGD | None = None
        self.epochs_probed = 0
        self._loaded: dict | None = None  # a state for the head of the next call

    @torch.no_grad()
    def features(self, encoder: torch.nn.Module, dataset: Samples
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """The frozen ``encoder``'s features of ``dataset`` and its labels, on the encoder's
        device, the rows without a label left out; no random number of the run is drawn."""
        device = _device_of(encoder)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            features, labels = extract_features(
                encoder, dataset, device=device, projector=not hasattr(encoder, "features"),
                num_workers=self.num_workers)
        kept = labels >= 0
        return features[kept].to(device), labels[kept].to(device)

    def __call__(self, encoder: torch.nn.Module) -> dict[str, float]:
        """One epoch's end: train the head one pass over ``encoder``'s training features and
        return both accuracies on the held-out split (``{LINEAR_KEY: ..., KNN_KEY: ...}``)."""
        train_x, train_y = self.features(encoder, self.train)
        test_x, test_y = self.features(encoder, self.test)
        if train_x.shape[0] == 0 or test_x.shape[0] == 0:
            raise ValueError(f"the online probe needs labeled training and held-out samples, "
                             f"got {train_x.shape[0]} and {test_x.shape[0]} with a label")
        high = int(torch.cat([train_y, test_y]).max())
        if high >= self.num_classes:
            raise ValueError(f"the labels must lie in [0, num_classes) = [0, "
                             f"{self.num_classes}), got labels up to {high}")
        head_train, head_test = standardized(train_x, test_x)
        self._train_head(head_train, train_y)
        with torch.no_grad():
            assert self.head is not None  # made by _train_head
            linear = topk_accuracy(self.head(head_test), test_y, ks=(1,))
            knn = topk_accuracy(knn_scores(train_x, train_y, test_x, self.num_classes,
                                           self.knn_k, self.knn_temperature), test_y, ks=(1,))
        return {LINEAR_KEY: linear["top1"], KNN_KEY: knn["top1"]}

    def _train_head(self, inputs: torch.Tensor, labels: torch.Tensor) -> None:
        """One pass of the head's SGD over ``inputs`` (standardized features), in the order of
        epoch :attr:`epochs_probed`."""
        head, optimizer = self._make_head(inputs.shape[1], inputs.device)
        order = torch.randperm(inputs.shape[0], generator=derived_generator(
            self.seed, self.epochs_probed)).to(inputs.device)
        with torch.enable_grad():
            for start in range(0, inputs.shape[0], HEAD_BATCH):
                batch = order[start:start + HEAD_BATCH]
                loss = F.cross_entropy(head(inputs[batch]), labels[batch])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        self.epochs_probed += 1

    def _make_head(self, width: int, device: torch.device
                   ) -> tuple[torch.nn.Linear, torch.optim.SGD]:
        """The head ``Linear(width, num_classes)`` at zero and its SGD, on ``device``, made once
        and returned; a state loaded before is put into them."""
        if self.head is not None and self.optimizer is not None:
            return self.head, self.optimizer
        # skip_init: nn.Linear's own initialization would draw from torch's global generator
        self.head = torch.nn.utils.skip_init(torch.nn.Linear, width, self.num_classes,
                                             device=device)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        self.optimizer = torch.optim.SGD(self.head.parameters(), lr=HEAD_LR,
                                         momentum=HEAD_MOMENTUM)
        if self._loaded is not None:
            self.head.load_state_dict(self._loaded["head"])
            self.optimizer.load_state_dict(self._loaded["optimizer"])
            self._loaded = None
        return self.head, self.optimizer

    def state_dict(self) -> dict:
        """The head's and its optimizer's states (``None`` before the first call) and the
        epochs probed."""
        if self.head is None or self.optimizer is None:  # both made together
            return dict(self._loaded or {"head": None, "optimizer": None,
                                         "epochs_probed": self.epochs_probed})
        return {"head": self.head.state_dict(), "optimizer": self.optimizer.state_dict(),
                "epochs_probed": self.epochs_probed}

    def load_state_dict(self, state: dict) -> None:
        """Continue from a :meth:`state_dict`; the head takes it at the next call, on the
        encoder's device."""
        if not isinstance(state, dict) or not {"head", "optimizer", "epochs_probed"} <= set(state):
            found = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"OnlineProbe.load_state_dict needs the probe's state_dict() "
                             f"(head, optimizer, epochs_probed), got {found}")
        self.epochs_probed = int(state["epochs_probed"])
        self.head = self.optimizer = None
        self._loaded = dict(state) if state["head"] is not None else None


def standardized(train: torch.Tensor, *others: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``train`` and each of ``others`` (features ``(N, d)``) standardized by ``train``'s
    per-dimension mean and variance (plus :data:`STANDARDIZE_EPS`): what the head reads."""
    mean = train.mean(dim=0)
    scale = (train.var(dim=0, correction=0) + STANDARDIZE_EPS).rsqrt()
    return tuple((features - mean) * scale for features in (train, *others))


def _device_of(encoder: torch.nn.Module) -> torch.device:
    """Where ``encoder``'s parameters live (the CPU for one without parameters)."""
    parameter = next(encoder.parameters(), None)
    return torch.device("cpu") if parameter is None else parameter.device


def _labeled(dataset: Samples, name: str) -> Samples:
    """A built-in dataset (one with ``info``) as it is; another as items ``(x, label)``
    (:class:`~contrastkit.train.inputs.LabeledDataset`: ``label`` -1 where it has none)."""
    from contrastkit.train.inputs import LabeledDataset

    if hasattr(dataset, "info"):
        return dataset
    try:
        return LabeledDataset(dataset)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from error
