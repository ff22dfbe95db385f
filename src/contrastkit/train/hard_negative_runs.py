"""Training with the protocol of the hard-negative paper: R. Jiang, T. Nguyen, S. Aeron,
P. Ishwar, "Hard-Negative Sampling for Contrastive Learning: Optimal Representation Geometry
and Neural- vs Dimensional-Collapse", arXiv:2311.05139 (Sec. 5, Algorithm 1).

An encoder with a ``C - 1``-dimensional output, unit-ball normalized (or unit-sphere, or
"none": ``f / sqrt(d)``, Algorithm 1's three options), is trained with Adam on
SCL / HSCL (negatives from the other classes) or UCL / HUCL (negatives from the whole batch),
``k`` negatives per positive pair resampled from the batch with exponential tilting ``beta``
(:func:`contrastkit.losses.hard_negative_loss`; ``beta = 0`` is the plain loss), the loss of a
pair being the mean-form InfoNCE of the experiments, or Definition 1's sum-form InfoNCE or
triplet loss (``alpha = 1``, Figs. 5 and 6). Positives are
the same-label rows of the batch (``positives="labels"``, the anchor itself included) or a
second copy of the anchor with independent Gaussian noise (``"noise"``, the paper's synthetic
Fig. 2, bottom row). After every ``record_every`` epochs the neural-collapse metrics of the
whole training set are recorded (:func:`contrastkit.geometry.neural_collapse`); at the end, the
class-mean spectrum (dimensional collapse), effective ranks, the nearest-class-mean accuracy
and the SCL and UCL losses of the final representation, beside the bounds of Theorems 2 and 3.
:func:`near_nc_initialization` trains an encoder to near neural collapse first (HSCL,
``beta = 10``: the paper's "near-NC" initialization, Sec. 5.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from contrastkit import geometry, theory
from contrastkit.checks.scalars import check_choice, check_count, check_nonnegative, check_positive
from contrastkit.losses import hard_negative_loss
from contrastkit.losses.hard_negative.feature_normalization import FEATURE_NORMALIZATIONS

#: Loss family -> the negative candidates of :func:`contrastkit.losses.hard_negative_loss`.
FAMILIES = {"scl": "other_classes", "ucl": "all"}
POSITIVES = ("labels", "noise")
#: The loss of a positive pair (``psi`` of :func:`contrastkit.losses.hard_negative_loss`,
#: ``alpha = 1``) -> the same ``psi`` in :mod:`contrastkit.theory`'s bounds.
PSI_BOUND_FORMS = {"infonce_mean": "mean", "infonce_sum": "sum", "triplet": "triplet"}
#: The hardness of the near-NC initialization: HSCL at ``beta = 10`` (Sec. 5.4).
NEAR_NC_BETA = 10.0
#: The neural-collapse metrics recorded per epoch (all 0 at neural collapse): within-class
#: variability, Papyan's equinorm and equiangularity and the ETF distance of the centred class
#: means, and the paper's three metrics on the uncentred means (Sec. 5, Fig. 3).
CURVE_METRICS = ("within_class_distance", "equinorm", "equiangularity", "etf_distance",
                 "zero_sum", "unit_norm", "equal_inner_product")
#: What :func:`train_hard_negative` reports at the end (besides the curves' last values).
FINAL_METRICS = ("nc_gap", "class_mean_effective_rank", "class_mean_log10_ratio",
                 "effective_rank", "ncm_top1", "train_loss", "loss_scl", "loss_ucl",
                 "theory_scl_bound", "theory_ucl_bound")


@dataclass(frozen=True)
class HardNegativeSetup:
    """The settings of one run (the paper's values as defaults: Sec. 5).

    ``family``: ``"scl"`` or ``"ucl"``; with ``beta > 0`` they are HSCL and HUCL.
    ``noise_std``: the standard deviation of the noise positives (variance 0.01 in the paper).
    ``normalize``: the feature normalization, ``"ball"`` (the paper's default), ``"sphere"``
    or ``"none"`` (``f / sqrt(d)``), in training and in every recorded metric.
    ``psi``: the loss of a pair, ``"infonce_mean"`` (the experiments'), ``"infonce_sum"`` or
    ``"triplet"`` (Definition 1 with ``alpha = 1``: Figs. 5 and 6).
    ``max_steps``: stop after this many optimizer steps (``None``: run every epoch).
    ``eval_batch``: rows per forward pass when recording (no gradient).
    """

    family: str = "scl"
    beta: float = 0.0
    positives: str = "labels"
    k: int = 256
    epochs: int = 400
    batch_size: int = 512
    lr: float = 1e-3
    noise_std: float = 0.1
    normalize: str = "ball"
    psi: str = "infonce_mean"
    record_every: int = 1
    max_steps: int | None = None
    eval_batch: int = 1024

    def __post_init__(self):
        check_choice("family", self.family, tuple(FAMILIES))
        check_choice("positives", self.positives, POSITIVES)
        check_choice("normalize", self.normalize, FEATURE_NORMALIZATIONS)
        check_choice("psi", self.psi, tuple(PSI_BOUND_FORMS))
        check_nonnegative("beta", self.beta)
        for name in ("k", "epochs", "record_every", "eval_batch"):
            check_count(name, getattr(self, name), 1)
        check_count("batch_size", self.batch_size, 2)
        check_positive("lr", self.lr)
        check_nonnegative("noise_std", self.noise_std)
        if self.max_steps is not None:
            check_count("max_steps", self.max_steps, 0)


@dataclass
class HardNegativeResult:
    """``curves``: epoch -> the :data:`CURVE_METRICS` of the training set; ``final``: the
    last curve point and the :data:`FINAL_METRICS`; ``spectrum``: the normalized class-mean
    covariance spectrum (descending); ``embedding``: the final training representation;
    ``epoch_losses``: each epoch's mean training loss (whether a run converged)."""

    curves: list[dict] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    final: dict = field(default_factory=dict)
    spectrum: list[float] = field(default_factory=list)
    embedding: torch.Tensor | None = None


def mlp_encoder(dim: int, out: int, hidden: int = 512) -> nn.Module:
    """The CPU encoder of vector data: Linear - ReLU, then the paper's projection head
    (Linear - BatchNorm - ReLU - Linear) to ``out`` dimensions."""
    from contrastkit.models.encoder import projector

    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(inplace=True),
                         projector(hidden, hidden, out))


def train_hard_negative(model: nn.Module, train: tuple[torch.Tensor, torch.Tensor],
                        setup: HardNegativeSetup, seed: int = 0,
                        test: tuple[torch.Tensor, torch.Tensor] | None = None,
                        device: str = "cpu") -> HardNegativeResult:
    """Train ``model`` on ``train = (inputs, labels)`` as ``setup`` says (see the module's
    text) and return its curves and final metrics. ``inputs`` are float rows or uint8 images
    (scaled to [0, 1] per batch); every random draw (batches, noise, negatives) comes from
    generators seeded by ``seed``. ``test`` gives the nearest-class-mean accuracy and the
    effective rank (the training set when ``None``)."""
    inputs, labels = train
    classes = int(labels.max()) + 1
    result, losses = HardNegativeResult(), []
    for epoch, losses in _epochs(model, train, setup, seed, device):
        if losses:
            result.epoch_losses.append(sum(losses) / len(losses))
        if epoch % setup.record_every == 0 or epoch == setup.epochs:
            z = embed(model, inputs, setup.eval_batch, device, setup.normalize)
            result.curves.append({"epoch": epoch, **_curve_point(z, labels)})
    z = embed(model, inputs, setup.eval_batch, device, setup.normalize)
    if not result.curves:
        result.curves.append({"epoch": 0, **_curve_point(z, labels)})
    result.final = {**{name: result.curves[-1][name] for name in CURVE_METRICS},
                    **_final_metrics(model, z, labels, classes, setup, seed, test, device),
                    "train_loss": sum(losses) / len(losses) if losses else math.nan}
    result.spectrum = geometry.class_mean_spectrum(z, labels).tolist()
    result.embedding = z
    return result


def _epochs(model: nn.Module, train: tuple[torch.Tensor, torch.Tensor],
            setup: HardNegativeSetup, seed: int, device: str):
    """Train ``model`` (moved to ``device``) with a fresh Adam, one epoch per iteration:
    yields the epoch (from 1) and its steps' losses, until ``setup.epochs`` or
    ``setup.max_steps`` steps. Every draw comes from generators seeded by ``seed``."""
    torch.manual_seed(seed)
    inputs, labels = train
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=setup.lr)
    draws = torch.Generator().manual_seed(seed)
    negatives = torch.Generator(device=device).manual_seed(seed + 1)
    steps = 0
    for epoch in range(1, setup.epochs + 1):
        if setup.max_steps is not None and steps >= setup.max_steps:
            return
        losses = []
        for rows in _batches(len(labels), setup.batch_size, draws):
            if setup.max_steps is not None and steps >= setup.max_steps:
                break
            x, y = _as_float(inputs[rows]).to(device), labels[rows].to(device)
            loss = _batch_loss(model, x, y, setup, draws, negatives)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            steps += 1
        yield epoch, losses


def _batches(n: int, batch_size: int, generator: torch.Generator) -> list[torch.Tensor]:
    """A shuffled epoch in batches of ``batch_size`` (the last partial one dropped), or one
    batch of everything when ``n <= batch_size`` (the paper's synthetic data: 300 < 512)."""
    order = torch.randperm(n, generator=generator)
    if n <= batch_size:
        return [order]
    return list(order[: n - n % batch_size].split(batch_size))


def _as_float(x: torch.Tensor) -> torch.Tensor:
    return x.float() / 255 if x.dtype == torch.uint8 else x


def _batch_loss(model, x, y, setup: HardNegativeSetup, draws, negatives) -> torch.Tensor:
    """The batch's loss: label positives on one view, or two noisy copies as views."""
    options = dict(candidates=FAMILIES[setup.family], k=setup.k, beta=setup.beta,
                   psi=setup.psi, normalize=setup.normalize, generator=negatives)
    if setup.positives == "labels":
        z = model(x)
        return hard_negative_loss(z, z, y, **options)
    noise = torch.randn((2, *x.shape), generator=draws).to(x.device) * setup.noise_std
    u, v = model(x + noise[0]), model(x + noise[1])
    if setup.family == "ucl":
        return hard_negative_loss(u, v, None, **options)
    return hard_negative_loss(u, v, y, positives="views", **options)


@torch.no_grad()
def embed(model: nn.Module, inputs: torch.Tensor, batch: int = 1024,
          device: str = "cpu", normalize: str = "ball") -> torch.Tensor:
    """The representations of ``inputs``, normalized as in training (``normalize``: unit ball
    by default; eval mode, float64, on CPU)."""
    from contrastkit.losses.hard_negative import normalize_features

    was_training = model.training
    model.eval()
    parts = [model(_as_float(inputs[start:start + batch]).to(device)).double().cpu()
             for start in range(0, len(inputs), batch)]
    model.train(was_training)
    return normalize_features(torch.cat(parts), normalize)


def _curve_point(z: torch.Tensor, labels: torch.Tensor) -> dict:
    metrics = geometry.neural_collapse(z, labels).as_dict()
    return {name: metrics[name] for name in CURVE_METRICS}


def _final_metrics(model, z, labels, classes: int, setup: HardNegativeSetup, seed: int,
                   test, device: str) -> dict:
    """The end-of-run metrics but ``train_loss`` (see :data:`FINAL_METRICS`)."""
    nc = geometry.neural_collapse(z, labels)
    spectrum = geometry.class_mean_spectrum(z, labels, normalize=True)[: classes - 1]
    _, means = geometry.class_means(z, labels)
    test_z, test_labels = (z, labels) if test is None else (
        embed(model, test[0], setup.eval_batch, device, setup.normalize), test[1])
    return {
        "nc_gap": _nc_gap(nc),
        "class_mean_effective_rank": geometry.effective_rank(means, center=True),
        "class_mean_log10_ratio": _log10_ratio(spectrum),
        "effective_rank": geometry.effective_rank(test_z, center=True),
        "ncm_top1": geometry.nearest_class_mean_accuracy(z, labels, test_z,
                                                         test_labels)["top1"],
        **representation_losses(z, labels, setup, seed),
        "theory_scl_bound": theory.scl_lower_bound(classes, setup.k,
                                                   PSI_BOUND_FORMS[setup.psi]),
        "theory_ucl_bound": theory.ucl_lower_bound(classes, setup.k,
                                                   PSI_BOUND_FORMS[setup.psi]),
    }


def _nc_gap(nc) -> float:
    """The largest of the within-class distance and the paper's three metrics (0 at NC)."""
    return nc_gap_of_point(nc.as_dict())


#: The metrics whose largest is the NC gap (all in :data:`CURVE_METRICS`).
NC_GAP_PARTS = ("within_class_distance", "zero_sum", "unit_norm", "equal_inner_product")


def nc_gap_of_point(point: dict) -> float:
    """The NC gap of a curve point (or any mapping of the :data:`NC_GAP_PARTS`)."""
    return max(point[name] for name in NC_GAP_PARTS)


def _log10_ratio(spectrum: torch.Tensor) -> float:
    """``log10(sigma_{C-1} / sigma_1)`` of the class-mean covariance: 0 for an ETF, very
    negative under dimensional collapse (floored at -300 for an exactly singular one)."""
    return float(torch.log10(spectrum[-1].clamp(min=1e-300)))


def representation_losses(z: torch.Tensor, labels: torch.Tensor, setup: HardNegativeSetup,
                          seed: int = 0) -> dict:
    """``loss_scl`` and ``loss_ucl``: the plain (``beta = 0``) SCL and UCL losses (``setup``'s
    ``psi``) of the representation ``z`` with label positives, ``k`` resampled negatives, over
    the training set in shuffled batches of ``batch_size`` (one batch when it holds them
    all): the losses whose minima Theorems 2 and 3 bound. Seeded."""
    chunks = _batches(len(labels), setup.batch_size, torch.Generator().manual_seed(seed))
    values = {}
    for family, candidates in FAMILIES.items():
        generator = torch.Generator().manual_seed(seed)
        values[f"loss_{family}"] = sum(
            float(hard_negative_loss(z[rows], z[rows], labels[rows], candidates=candidates,
                                     k=setup.k, psi=setup.psi, normalize=False,
                                     generator=generator))
            for rows in chunks) / len(chunks)
    return values


def near_nc_initialization(model: nn.Module, train: tuple[torch.Tensor, torch.Tensor],
                           setup: HardNegativeSetup, epochs: int, seed: int = 0,
                           device: str = "cpu") -> float:
    """Train ``model`` in place towards neural collapse, the paper's "near-NC" initialization
    (Sec. 5.4: HSCL at ``beta = 10`` until near NC; then a fresh optimizer continues under
    the setting studied): ``epochs`` epochs of HSCL at :data:`NEAR_NC_BETA` with label
    positives, unit-ball normalization and the mean-form InfoNCE, ``setup``'s ``k``, batch
    size, learning rate and ``max_steps``. Returns the ``nc_gap`` reached (the largest of the
    within-class distance and the paper's three metrics: 0 at NC)."""
    check_count("epochs", epochs, 1)
    init = HardNegativeSetup(family="scl", beta=NEAR_NC_BETA, positives="labels", k=setup.k,
                             epochs=epochs, batch_size=setup.batch_size, lr=setup.lr,
                             record_every=epochs, max_steps=setup.max_steps,
                             eval_batch=setup.eval_batch)
    for _ in _epochs(model, train, init, seed, device):
        pass
    return nc_gap_of(model, train, init, device)


def nc_gap_of(model: nn.Module, train: tuple[torch.Tensor, torch.Tensor],
              setup: HardNegativeSetup, device: str = "cpu") -> float:
    """The ``nc_gap`` of ``model``'s representation of ``train = (inputs, labels)``, normalized
    as ``setup`` says: the largest of the within-class distance and the paper's zero-sum,
    unit-norm and equal-inner-product metrics (0 at neural collapse)."""
    inputs, labels = train
    z = embed(model.to(device), inputs, setup.eval_batch, device, setup.normalize)
    return _nc_gap(geometry.neural_collapse(z, labels))
