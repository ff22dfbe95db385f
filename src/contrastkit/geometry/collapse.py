"""Neural collapse and dimensional collapse of representations.

Two families of neural-collapse metrics, clearly named:

- the hard-negative paper's (Jiang et al., "Hard-negative sampling ... Neural vs Dimensional
  Collapse", Sec. 5 / Fig. 3, Table 2), on the *uncentred* class means ``mu_c`` of the
  representation as given (the paper's unit-ball outputs): ``zero_sum``, ``unit_norm``,
  ``equal_inner_product`` -- and the variants its authors' notebook actually computes, suffixed
  ``_code`` / ``_cosine`` (arXiv:2311.05139, Sec. 5 metrics as in the authors' notebook);
- Papyan, Han & Donoho (2020)'s NC1/NC2 on the class means centred at the global mean:
  ``nc1``, ``equinorm``, ``equiangularity``, ``max_angle``, plus ``etf_distance``.

All are 0 on exact neural collapse (every sample at its class mean, the means a simplex ETF).
Dimensional collapse is read from :func:`singular_spectrum`, :func:`class_mean_spectrum` and
:func:`effective_rank`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from numbers import Integral

import torch

from contrastkit.checks.tensors import check_labels
from contrastkit.rows import unit_rows

from ._inputs import as_float64_features


@dataclass(frozen=True)
class NeuralCollapseMetrics:
    """Neural-collapse metrics of labelled features; every field is 0 on exact collapse.

    Hard-negative paper (uncentred class means ``mu_c``, ``C`` classes):

    - ``zero_sum``: ``||sum_c mu_c||`` (paper); ``zero_sum_code``: ``||mean_c mu_c||`` (the
      authors' notebook, the paper's value divided by ``C``).
    - ``unit_norm``: ``mean_c | ||mu_c|| - 1 |`` (paper and code agree).
    - ``equal_inner_product``: ``mean_{j != k} |mu_j . mu_k + 1/(C-1)|`` (paper, raw inner
      products); ``equal_inner_product_cosine``: the same with cosines (the code);
      ``..._max``: the maximum over ``j != k`` instead of the mean.
    - ``within_class_distance``: ``mean_c mean_{i in c} ||z_i - mu_c||`` (the code's
      "inner_dist").

    Papyan et al. (class means centred at the global mean ``mu_G``):

    - ``nc1``: ``Tr(Sigma_W Sigma_B^+) / C``.
    - ``equinorm``: ``std_c ||mu_c - mu_G|| / mean_c ||mu_c - mu_G||``.
    - ``equiangularity``: ``std_{j != k} cos(mu_j - mu_G, mu_k - mu_G)``.
    - ``max_angle``: ``mean_{j != k} |cos(mu_j - mu_G, mu_k - mu_G) + 1/(C-1)|``.
    - ``etf_distance``: ``|| G / ||G||_F - E / ||E||_F ||_F`` with ``G`` the Gram matrix of the
      centred means and ``E = I - 11^T / C`` that of a simplex ETF.
    """

    num_classes: int
    zero_sum: float
    zero_sum_code: float
    unit_norm: float
    equal_inner_product: float
    equal_inner_product_max: float
    equal_inner_product_cosine: float
    equal_inner_product_cosine_max: float
    within_class_distance: float
    nc1: float
    equinorm: float
    equiangularity: float
    max_angle: float
    etf_distance: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def class_means(z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct labels (sorted) and the mean of ``z`` over each, in float64.

    Example:
        >>> import torch
        >>> classes, means = class_means(torch.tensor([[1.0], [3.0], [5.0]]), [0, 0, 2])
        >>> classes.tolist(), means.tolist()
        ([0, 2], [[2.0], [5.0]])
    """
    z = as_float64_features("z", z, min_rows=1)
    labels = check_labels(labels, z.shape[0], device=z.device)
    classes, index = torch.unique(labels, return_inverse=True)
    sums = torch.zeros(classes.shape[0], z.shape[1], dtype=z.dtype, device=z.device)
    sums.index_add_(0, index, z)
    counts = torch.bincount(index, minlength=classes.shape[0]).to(z.dtype)
    return classes, sums / counts[:, None]


def neural_collapse(z: torch.Tensor, labels: torch.Tensor) -> NeuralCollapseMetrics:
    """Neural-collapse metrics of features ``z`` ``(N, d)`` with class ids ``labels`` ``(N,)``.

    Computed in float64 on ``z`` as given (normalize it first if the model's representation is
    normalized, as the hard-negative paper's unit-ball outputs are). Needs at least 2 classes.

    Example:
        >>> import torch
        >>> from contrastkit import theory
        >>> means = torch.from_numpy(theory.simplex_etf(3, 2))
        >>> z, labels = means.repeat(4, 1), torch.arange(3).repeat(4)   # exact collapse
        >>> m = neural_collapse(z, labels)
        >>> max(abs(value) for value in m.as_dict().values() if isinstance(value, float)) < 1e-12
        True
    """
    z = as_float64_features("z", z)
    labels = check_labels(labels, z.shape[0], device=z.device)
    classes, means = class_means(z, labels)
    num = classes.shape[0]
    if num < 2:
        raise ValueError(f"labels must contain at least 2 classes, got {num}")
    _, index = torch.unique(labels, return_inverse=True)
    off_diagonal = ~torch.eye(num, dtype=torch.bool, device=z.device)
    etf_value = -1.0 / (num - 1)

    norms = means.norm(dim=1)
    inner = means @ means.T
    cosine = _cosines(means)
    inner_gap = (inner + 1.0 / (num - 1))[off_diagonal].abs()
    cosine_gap = (cosine - etf_value)[off_diagonal].abs()

    residual_norms = (z - means[index]).norm(dim=1)
    per_class_distance = torch.zeros(num, dtype=z.dtype, device=z.device)
    per_class_distance.index_add_(0, index, residual_norms)
    per_class_distance /= torch.bincount(index, minlength=num).to(z.dtype)

    centred = means - z.mean(dim=0)
    centred_norms = centred.norm(dim=1)
    centred_cosine = _cosines(centred)
    return NeuralCollapseMetrics(
        num_classes=num,
        zero_sum=float(means.sum(dim=0).norm()),
        zero_sum_code=float(means.mean(dim=0).norm()),
        unit_norm=float((norms - 1).abs().mean()),
        equal_inner_product=float(inner_gap.mean()),
        equal_inner_product_max=float(inner_gap.max()),
        equal_inner_product_cosine=float(cosine_gap.mean()),
        equal_inner_product_cosine_max=float(cosine_gap.max()),
        within_class_distance=float(per_class_distance.mean()),
        nc1=_papyan_nc1(z, means, index, centred),
        equinorm=float(centred_norms.std(correction=0) / centred_norms.mean()),
        equiangularity=float(centred_cosine[off_diagonal].std(correction=0)),
        max_angle=float((centred_cosine[off_diagonal] - etf_value).abs().mean()),
        etf_distance=_etf_distance(centred),
    )


def _cosines(x: torch.Tensor) -> torch.Tensor:
    """The cosine similarities of the rows of ``x`` (0 with a zero row)."""
    unit = unit_rows(x)
    return unit @ unit.T


def _papyan_nc1(z: torch.Tensor, means: torch.Tensor, index: torch.Tensor,
                centred: torch.Tensor) -> float:
    """``Tr(Sigma_W Sigma_B^+) / C`` (Papyan et al. 2020, Fig. 6)."""
    residuals = z - means[index]
    within = residuals.T @ residuals / z.shape[0]
    between = centred.T @ centred / means.shape[0]
    pinv = torch.linalg.pinv(between, hermitian=True)
    return float(torch.trace(within @ pinv) / means.shape[0])


def _etf_distance(centred: torch.Tensor) -> float:
    num = centred.shape[0]
    gram = centred @ centred.T
    gram_norm = gram.norm()
    if gram_norm == 0:
        return math.sqrt(2.0)  # all class means coincide: as far from an ETF as the scale allows
    etf = torch.eye(num, dtype=gram.dtype, device=gram.device) - 1.0 / num
    return float((gram / gram_norm - etf / etf.norm()).norm())


def singular_spectrum(
    z: torch.Tensor, *, center: bool = True, normalize: bool = False
) -> torch.Tensor:
    """Singular values of the covariance of ``z`` (``d`` values, descending): dimensional collapse.

    The covariance is ``(1/N) sum_i (z_i - mean)(z_i - mean)^T`` (uncentred second moment with
    ``center=False``); its singular values are its eigenvalues. Collapsed dimensions show as
    values orders of magnitude below the largest (Jing et al. 2022; the hard-negative paper's
    Def. 7). ``normalize=True`` divides by the largest value (the paper plots
    ``log(sigma_i / sigma_1)``). Computed from the SVD of ``z`` in float64.
    """
    z = as_float64_features("z", z, min_rows=1)
    return _covariance_spectrum(z, center=center, ddof=0, normalize=normalize)


def class_mean_spectrum(
    z: torch.Tensor, labels: torch.Tensor, *, normalize: bool = True
) -> torch.Tensor:
    """Singular values of the covariance of the class means (the hard-negative paper's Fig. 4).

    ``np.cov`` of the ``C`` class means (``ddof = 1``), ``d`` values descending, divided by the
    largest when ``normalize``. An exact simplex ETF with ``d = C - 1`` gives all ones.
    """
    _, means = class_means(z, labels)
    if means.shape[0] < 2:
        raise ValueError(f"labels must contain at least 2 classes, got {means.shape[0]}")
    return _covariance_spectrum(means, center=True, ddof=1, normalize=normalize)


def _covariance_spectrum(x: torch.Tensor, center: bool, ddof: int, normalize: bool
                         ) -> torch.Tensor:
    if center:
        x = x - x.mean(dim=0)
    values = torch.linalg.svdvals(x).square() / (x.shape[0] - ddof)
    spectrum = torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
    spectrum[: values.shape[0]] = values
    if normalize and spectrum[0] > 0:
        spectrum = spectrum / spectrum[0]
    return spectrum


def effective_rank(z: torch.Tensor, *, center: bool = False) -> float:
    """Effective rank ``exp(H(p))``, ``p_k = sigma_k / sum sigma`` over the singular values of z.

    Roy & Vetterli (2007); the RankMe measure of Garrido et al. (2023). Between 1 (rank one)
    and ``min(N, d)`` (all singular values equal); returns 0.0 for an all-zero matrix.
    ``center=True`` subtracts the mean row first.

    Example:
        >>> import torch
        >>> round(effective_rank(torch.eye(4)), 6), round(effective_rank(torch.ones(5, 3)), 6)
        (4.0, 1.0)
    """
    z = as_float64_features("z", z, min_rows=1)
    if center:
        z = z - z.mean(dim=0)
    singular = torch.linalg.svdvals(z)
    total = singular.sum()
    if total == 0:
        return 0.0
    p = singular[singular > 0] / total
    return float(torch.exp(-(p * p.log()).sum()))


def nearest_class_mean_accuracy(
    z: torch.Tensor,
    labels: torch.Tensor,
    test_z: torch.Tensor | None = None,
    test_labels: torch.Tensor | None = None,
    *,
    top_k: tuple[int, ...] = (1,),
    metric: str = "inner",
) -> dict[str, float]:
    """Accuracy of the nearest-class-mean classifier built from ``(z, labels)``.

    ``metric="inner"`` predicts ``argmax_c z . mu_c`` (the hard-negative paper's downstream
    classifier); ``"euclidean"`` predicts ``argmin_c ||z - mu_c||`` (Papyan's NC4). Evaluated
    on ``(test_z, test_labels)``, or on the training set when they are omitted. Returns
    ``{"top1": ..., "top5": ...}`` for the requested ``top_k``.

    Example:
        >>> import torch
        >>> z = torch.tensor([[1.0, 0.1], [0.9, -0.1], [-1.0, 0.0], [-0.8, 0.2]])
        >>> nearest_class_mean_accuracy(z, [0, 0, 1, 1])
        {'top1': 1.0}
    """
    if metric not in ("inner", "euclidean"):
        raise ValueError(f"metric must be 'inner' or 'euclidean', got {metric!r}")
    classes, means = class_means(z, labels)
    if (test_z is None) != (test_labels is None):
        raise ValueError("test_z and test_labels must be given together")
    if test_z is None or test_labels is None:  # both (checked above): the training rows
        test_z, test_labels = z, labels
    test_z = as_float64_features("test_z", test_z, min_rows=1).to(means.device)
    if test_z.shape[1] != means.shape[1]:
        raise ValueError(
            f"test_z must have dim {means.shape[1]} like z, got {test_z.shape[1]}"
        )
    test_labels = check_labels(
        test_labels, test_z.shape[0], name="test_labels", device=means.device
    )
    for k in top_k:
        if isinstance(k, bool) or not isinstance(k, Integral) or not 1 <= k <= classes.shape[0]:
            raise ValueError(
                f"top_k entries must be integers in [1, {classes.shape[0]}] (the number of "
                f"classes), got {k!r}"
            )
    if metric == "inner":
        scores = test_z @ means.T
    else:
        scores = -torch.cdist(test_z, means)
    ranked = classes[scores.argsort(dim=1, descending=True)]
    hits = ranked == test_labels[:, None]
    return {f"top{k}": float(hits[:, :k].any(dim=1).double().mean()) for k in top_k}
