"""A ``hardneg`` cell of a recipe: one run of the hard-negative paper's protocol
(:func:`contrastkit.train.hard_negative_runs.train_hard_negative`; R. Jiang, T. Nguyen,
S. Aeron, P. Ishwar, "Hard-Negative Sampling for Contrastive Learning: Optimal Representation
Geometry and Neural- vs Dimensional-Collapse", arXiv:2311.05139) on the paper's synthetic
Gaussian classes or on an image dataset of :data:`contrastkit.data.DATASETS`.

The cell writes ``curves.json`` (the neural-collapse metrics per recorded epoch) and
``representation.npz`` (the final representation of the training set, its labels and the
class-mean spectrum) to its folder, for the figures. The encoder's initial weights are drawn
from the cell's seed alone (cells share long-lived worker processes). ``normalize`` (``ball``,
the default; ``sphere``; ``none``) and ``psi`` (``infonce_mean``, the default; ``infonce_sum``;
``triplet``) are Algorithm 1's feature normalization and Definition 1's pair loss.

``init: near_nc`` starts the run from the paper's near-NC initialization (Sec. 5.4): the
encoder is first trained ``init_epochs`` epochs with HSCL at ``beta = 10``
(:func:`contrastkit.train.hard_negative_runs.near_nc_initialization`), then the cell's own
training starts with a fresh optimizer; ``init_nc_gap`` is the NC gap it starts from,
measured when the cell sets ``init`` (NaN otherwise: ``init: random`` is the default, and an
embedding of the training set is not free on the larger datasets).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from contrastkit.experiments.convergence import (
    HARDNEG_CURVES,
    HARDNEG_INPUTS,
    epoch_curves,
    judge_curves,
)
from contrastkit.experiments.kinds import CELL_KINDS, CellKind
from contrastkit.files import write_json_atomic

if TYPE_CHECKING:
    from contrastkit.experiments.recipe import Cell

#: Settings of the data and the encoder (the others are ``HardNegativeSetup``'s, ``loss``
#: being its ``family``), and of the initialization.
DATA_SETTINGS = ("dataset", "data_dir", "n_per_class", "dim", "num_classes", "backbone",
                 "hidden", "image_size", "device", "init", "init_epochs")
INITS = ("random", "near_nc")
#: Training settings under the recipe's names -> ``HardNegativeSetup`` fields.
SETUP_NAMES = {"loss": "family", "beta": "beta", "positives": "positives", "k": "k",
               "epochs": "epochs", "batch_size": "batch_size", "lr": "lr",
               "noise_std": "noise_std", "record_every": "record_every",
               "normalize": "normalize", "psi": "psi"}
DEFAULTS = dict(dataset="synthetic", data_dir="data", n_per_class=100, dim=3072, num_classes=3,
                backbone="mlp", hidden=512, image_size=None, device="auto", init="random",
                init_epochs=400)
#: The smoke run's batch (one step on the tests' 8 to 15 fake images).
SMOKE_BATCH = 8
CURVES, REPRESENTATION = "curves.json", "representation.npz"


#: ``CURVE_METRICS`` then ``FINAL_METRICS`` of :mod:`contrastkit.train.hard_negative_runs`
#: (written out: listing recipes must not import torch).
METRICS = ("within_class_distance", "equinorm", "equiangularity", "etf_distance", "zero_sum",
           "unit_norm", "equal_inner_product", "nc_gap", "class_mean_effective_rank",
           "class_mean_log10_ratio", "effective_rank", "ncm_top1", "train_loss", "loss_scl",
           "loss_ucl", "theory_scl_bound", "theory_ucl_bound", "init_nc_gap", "converged",
           *HARDNEG_INPUTS)


def hardneg_settings() -> tuple[str, ...]:
    """The settings a hardneg recipe may set (see :data:`DATA_SETTINGS`, :data:`SETUP_NAMES`)."""
    return (*DATA_SETTINGS, *SETUP_NAMES)


def hardneg_cell(cell: Cell, folder=None, steps: int | None = None) -> dict:
    """Run a hardneg cell with its seed (``steps``: 0 checks the settings and returns NaN
    for every metric without reading data; 1 is one optimizer step at batch
    :data:`SMOKE_BATCH`, on 4 synthetic points per class). Writes its curves and
    representation to ``folder`` if given. ``device: auto`` is CUDA when there is one."""
    settings = {**DEFAULTS, **cell.settings}
    if steps == 1:
        settings["n_per_class"] = min(settings["n_per_class"], 4)
    if settings["device"] == "auto":
        import torch

        settings["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    setup = _setup(cell, settings, steps)
    _check_data_settings(cell, settings)
    if steps == 0:
        return dict.fromkeys(METRICS, math.nan)
    import torch

    from contrastkit.train.hard_negative_runs import (
        nc_gap_of,
        near_nc_initialization,
        train_hard_negative,
    )

    train, test, info = _data(settings, cell.seed)
    torch.manual_seed(cell.seed)  # the encoder's initial weights: the cell's seed alone
    model = _model(settings, info)
    start = {}  # the NC gap at the start, recorded only in a recipe about the initialization
    if settings["init"] == "near_nc":
        start["init_nc_gap"] = near_nc_initialization(
            model, train, setup, settings["init_epochs"], seed=cell.seed,
            device=settings["device"])
    elif "init" in cell.settings:  # the random start's
        start["init_nc_gap"] = nc_gap_of(model, train, setup, device=settings["device"])
    result = train_hard_negative(model, train, setup, seed=cell.seed, test=test,
                                 device=settings["device"])
    if folder is not None:
        _write(folder, result, train[1])
    return {**result.final, **judged(result), **start}


def judged(result) -> dict:
    """The convergence verdict (:mod:`contrastkit.experiments.convergence`) on a run's
    ``HardNegativeResult``: its epochs' mean losses and its recorded neural-collapse curves,
    the NC gap among them."""
    from contrastkit.train.hard_negative_runs import nc_gap_of_point

    losses = result.epoch_losses
    points = [{**point, "nc_gap": nc_gap_of_point(point)} for point in result.curves]
    curves = {"loss": (range(1, len(losses) + 1), losses),
              **epoch_curves(points, HARDNEG_CURVES[1:])}
    return judge_curves(curves)[0]


def _setup(cell: Cell, settings: dict, steps: int | None):
    """The cell's ``HardNegativeSetup``; a bad setting is a ``ValueError`` naming the cell."""
    from contrastkit.train.hard_negative_runs import HardNegativeSetup

    chosen = {field: settings[name] for name, field in SETUP_NAMES.items() if name in settings}
    if steps is not None:
        chosen["max_steps"] = steps
        if steps == 1:
            chosen["batch_size"] = SMOKE_BATCH
    try:
        return HardNegativeSetup(**chosen)
    except ValueError as error:
        raise ValueError(f"cell {cell.cell_id} of {cell.recipe}: {error}") from None


def _check_data_settings(cell: Cell, settings: dict) -> None:
    """The dataset and backbone are known; the synthetic data needs the MLP or a 3072-d input
    reshaped for a CNN (the paper's ResNet-50); the initialization is known."""
    from contrastkit.checks.scalars import check_choice, check_count
    from contrastkit.data import DATASETS
    from contrastkit.models import BACKBONES

    where = f"cell {cell.cell_id} of {cell.recipe}"
    try:
        check_choice("init", settings["init"], INITS)
        check_count("init_epochs", settings["init_epochs"], 1)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if settings["dataset"] != "synthetic" and settings["dataset"] not in DATASETS.names():
        raise ValueError(f"{where}: dataset must be synthetic or one of "
                         f"{', '.join(DATASETS.names())}, got {settings['dataset']!r}")
    if settings["backbone"] != "mlp" and settings["backbone"] not in BACKBONES.names():
        raise ValueError(f"{where}: backbone must be mlp or one of "
                         f"{', '.join(BACKBONES.names())}, got {settings['backbone']!r}")
    image_input = settings["dataset"] != "synthetic"
    if image_input and settings["backbone"] == "mlp":
        raise ValueError(f"{where}: backbone mlp takes the synthetic vectors; images need a "
                         f"CNN backbone ({', '.join(BACKBONES.names())})")
    if not image_input and settings["backbone"] != "mlp" and settings["dim"] != 3 * 32 * 32:
        raise ValueError(f"{where}: backbone {settings['backbone']} reads the synthetic "
                         f"vectors as 3x32x32 images, so dim must be 3072, got "
                         f"{settings['dim']!r}")


def _data(settings: dict, seed: int):
    """``(train, test, info)``: the synthetic classes (test = a second draw, by seed), or an
    image dataset's train and test splits as uint8 tensors, resized to ``image_size``;
    ``info`` holds the number of ``classes`` and, for images, ``channels``, ``mean``, ``std``."""
    if settings["dataset"] == "synthetic":
        return _synthetic(settings, seed)
    from contrastkit.data import load_dataset

    datasets = [load_dataset(settings["dataset"], split, settings["data_dir"])
                for split in ("train", "test")]
    meta = datasets[0].info
    info = dict(classes=meta.num_classes, channels=meta.channels, mean=meta.mean, std=meta.std)
    train, test = (_stack(dataset, settings["image_size"]) for dataset in datasets)
    return train, test, info


def _synthetic(settings: dict, seed: int):
    """The paper's synthetic data (Sec. 5): Gaussian classes with identity covariance around
    means with i.i.d. U[-1, 1] components, drawn once per seed; the test set is a second
    draw around the same means."""
    from contrastkit.data import gaussian_mixture

    classes, per_class = settings["num_classes"], settings["n_per_class"]
    x, y = gaussian_mixture(2 * classes * per_class, settings["dim"], classes, separation=1.0,
                            noise=1.0, seed=seed, mean_law="uniform")
    by_class = y.argsort(stable=True).view(classes, 2 * per_class)
    train, test = by_class[:, :per_class].reshape(-1), by_class[:, per_class:].reshape(-1)
    info = dict(classes=classes, channels=3, mean=(0.0,) * 3, std=(1.0,) * 3)
    return (x[train], y[train]), (x[test], y[test]), info


def _model(settings: dict, info: dict):
    """The MLP encoder of vectors, or a backbone with the paper's projection head to
    ``C - 1`` dimensions (synthetic vectors read as 3x32x32 images)."""
    from torch import nn

    from contrastkit.models import build_encoder
    from contrastkit.train.hard_negative_runs import mlp_encoder

    out = info["classes"] - 1
    if settings["backbone"] == "mlp":
        return mlp_encoder(settings["dim"], out, settings["hidden"])
    encoder = build_encoder(settings["backbone"], info["channels"], info["mean"], info["std"],
                            projector_hidden=settings["hidden"], projector_out=out)
    if settings["dataset"] == "synthetic":
        return nn.Sequential(nn.Unflatten(1, (3, 32, 32)), encoder)
    return encoder


def _stack(dataset, image_size):
    """All images of ``dataset`` as one uint8 tensor ``(N, C, H, W)`` (resized to
    ``image_size`` if set) and the labels."""
    import torch
    import torch.nn.functional as F

    images = torch.stack([torch.as_tensor(dataset[i][0]) for i in range(len(dataset))])
    labels = torch.tensor([int(dataset[i][1]) for i in range(len(dataset))])
    if image_size is not None and images.shape[-1] != image_size:
        images = F.interpolate(images.float(), size=(image_size, image_size), mode="bilinear",
                               antialias=True).round().clamp(0, 255).to(torch.uint8)
    return images, labels


def _write(folder, result, labels) -> None:
    """``curves.json`` and ``representation.npz`` in the cell's ``folder``."""
    from pathlib import Path

    import numpy as np

    folder = Path(folder)
    write_json_atomic(folder / CURVES, result.curves)
    np.savez(folder / REPRESENTATION, z=result.embedding.numpy(), labels=labels.numpy(),
             spectrum=np.asarray(result.spectrum))


CELL_KINDS.register("hardneg", CellKind(
    run=hardneg_cell, settings=hardneg_settings, metrics=METRICS,
    data="the hard-negative paper's protocol (synthetic Gaussian classes or images)"))
