"""similarity_stats: exact values on constructed geometries, against a loop, and the paper's
Lemma C.4 / Theorem 5.2 on random embeddings."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit import geometry, theory

METHODS = [("moments", 1024), ("pairs", 1), ("pairs", 3), ("pairs", 5), ("pairs", 1024)]


def random_views(batch, dim, seed, dtype=torch.float64):
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(batch, dim, generator=generator, dtype=dtype)
    v = u + 0.7 * torch.randn(batch, dim, generator=generator, dtype=dtype)
    return u, v


def loop_reference(u, v, labels=None):
    """Every statistic straight from its definition: a Python loop over ordered pairs."""
    u = [row / row.norm() for row in u.double()]
    v = [row / row.norm() for row in v.double()]
    batch = len(u)
    kinds = {"positive": [], "negative": [], "within": []}
    if labels is not None:
        for name in ("negative", "within"):
            kinds[f"{name}_same_class"], kinds[f"{name}_different_class"] = [], []
    for i in range(batch):
        kinds["positive"].append(float(u[i] @ v[i]))
        for j in range(batch):
            if i == j:
                continue
            pairs = {"negative": [float(u[i] @ v[j])], "within": [float(u[i] @ u[j]),
                                                                 float(v[i] @ v[j])]}
            for name, values in pairs.items():
                kinds[name].extend(values)
                if labels is not None:
                    side = "same" if labels[i] == labels[j] else "different"
                    kinds[f"{name}_{side}_class"].extend(values)
    out = {}
    for name, values in kinds.items():
        count = len(values)
        mean = sum(values) / count if count else None
        out[f"{name}_mean"] = mean
        out[f"{name}_var"] = sum((x - mean) ** 2 for x in values) / count if count else None
        out[f"{name}_count"] = count
    return out


def assert_stats_match(stats, expected, tol=1e-12):
    got = stats.as_dict()
    for key, value in expected.items():
        if value is None or isinstance(value, int):
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, abs=tol), key


@pytest.mark.parametrize("method,block_size", METHODS)
def test_equals_loop_over_all_pairs(method, block_size):
    u, v = random_views(11, 4, seed=0)
    stats = geometry.similarity_stats(u, v, method=method, block_size=block_size)
    assert_stats_match(stats, loop_reference(u, v))
    assert stats.negative_same_class_mean is None


@pytest.mark.parametrize("method,block_size", METHODS)
def test_label_split_equals_loop(method, block_size):
    u, v = random_views(13, 3, seed=1)
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 0, 3, 1, 2, 2, 0])
    stats = geometry.similarity_stats(u, v, labels, method=method, block_size=block_size)
    assert_stats_match(stats, loop_reference(u, v, labels.tolist()))


def test_methods_agree_on_a_larger_batch():
    u, v = random_views(300, 16, seed=2)
    labels = torch.arange(300) % 7
    moments = geometry.similarity_stats(u, v, labels, method="moments").as_dict()
    pairs = geometry.similarity_stats(u, v, labels, method="pairs", block_size=64).as_dict()
    for key, value in moments.items():
        assert pairs[key] == pytest.approx(value, rel=1e-10, abs=1e-13), key


def test_auto_handles_dim_larger_than_batch():
    u, v = random_views(4, 10, seed=3)
    stats = geometry.similarity_stats(u, v)
    assert_stats_match(stats, loop_reference(u, v))


def test_float32_input_is_measured_exactly():
    u, v = random_views(40, 8, seed=4, dtype=torch.float32)
    got = geometry.similarity_stats(u, v).as_dict()
    expected = geometry.similarity_stats(u.double(), v.double()).as_dict()
    assert got == expected


def test_rows_are_normalized():
    u, v = random_views(9, 3, seed=5)
    scaled = geometry.similarity_stats(3.0 * u, 0.5 * v).as_dict()
    for key, value in geometry.similarity_stats(u, v).as_dict().items():
        assert scaled[key] == pytest.approx(value, abs=1e-13)


def test_no_same_class_pairs_gives_none():
    u, v = random_views(5, 3, seed=6)
    stats = geometry.similarity_stats(u, v, torch.arange(5))
    assert stats.negative_same_class_count == 0
    assert stats.negative_same_class_mean is None and stats.negative_same_class_var is None
    assert stats.negative_different_class_mean == pytest.approx(stats.negative_mean, abs=1e-15)


# ---- constructed geometries ----------------------------------------------------------------


@pytest.mark.parametrize("method", ["moments", "pairs"])
@pytest.mark.parametrize("n,d", [(2, 1), (5, 4), (8, 12)])
def test_simplex_etf(method, n, d):
    etf = torch.from_numpy(theory.simplex_etf(n, d))
    stats = geometry.similarity_stats(etf, etf, method=method, block_size=3)
    assert stats.positive_mean == pytest.approx(1.0, abs=1e-12)
    assert stats.positive_var == pytest.approx(0.0, abs=1e-12)
    assert stats.negative_mean == pytest.approx(-1 / (n - 1), abs=1e-12)
    assert stats.negative_var == pytest.approx(0.0, abs=1e-12)
    assert stats.within_mean == pytest.approx(-1 / (n - 1), abs=1e-12)
    assert stats.negative_count == n * (n - 1) and stats.within_count == 2 * n * (n - 1)


def antipodal(k):
    """The 2k points +-e_1, ..., +-e_k (LMCL's Eq. 5 equality case; sum zero)."""
    eye = torch.eye(k, dtype=torch.float64)
    return torch.cat([eye, -eye])


@pytest.mark.parametrize("method", ["moments", "pairs"])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_antipodal(method, k):
    # each point has one antipode (-1) and 2k - 2 orthogonal points (0) among the n - 1 others
    points = antipodal(k)
    n = 2 * k
    stats = geometry.similarity_stats(points, points, method=method, block_size=2)
    mean = -1 / (n - 1)
    assert stats.positive_mean == pytest.approx(1.0, abs=1e-12)
    assert stats.negative_mean == pytest.approx(mean, abs=1e-12)
    assert stats.negative_var == pytest.approx(1 / (n - 1) - mean**2, abs=1e-12)


def minibatch_optimum(n, m, extreme):
    """Fixed mini-batches of m pairs, each batch a simplex ETF with u_i = v_i (Theorem 5.5).

    ``"max"``: every batch uses the same ETF (Fig. 2a); ``"min"``: the batches' ETFs lie in
    mutually orthogonal (m - 1)-dim subspaces, which needs d >= b (m - 1) (Fig. 2b).
    """
    b = n // m
    etf = torch.from_numpy(theory.simplex_etf(m, m - 1))
    if extreme == "max":
        return etf.repeat(b, 1)
    return torch.block_diag(*[etf] * b)


def theorem_5_5_bounds(n, m):
    """Eq. (11): Var[s_neg] in [(n - m) / ((m - 1)(n - 1)^2), n (n - m) / ((m - 1)(n - 1)^2)]."""
    return (n - m) / ((m - 1) * (n - 1) ** 2), n * (n - m) / ((m - 1) * (n - 1) ** 2)


@pytest.mark.parametrize("method", ["moments", "pairs"])
@pytest.mark.parametrize("n,m", [(4, 2), (6, 3), (12, 3), (12, 4), (20, 5)])
@pytest.mark.parametrize("extreme", ["min", "max"])
def test_theorem_5_5_extreme_minibatch_optima(method, n, m, extreme):
    z = minibatch_optimum(n, m, extreme)
    stats = geometry.similarity_stats(z, z, method=method, block_size=5)
    low, high = theorem_5_5_bounds(n, m)
    assert stats.positive_mean == pytest.approx(1.0, abs=1e-12)
    assert stats.negative_mean == pytest.approx(-1 / (n - 1), abs=1e-12)
    assert stats.negative_var == pytest.approx(low if extreme == "min" else high, abs=1e-12)


def test_figure_2a_upper_bound_is_eight_ninths():
    # n = 4, m = 2: u1 = u3 = e, u2 = u4 = -e; negatives -1, +1, -1 per row
    z = minibatch_optimum(4, 2, "max")
    assert geometry.similarity_stats(z, z).negative_var == pytest.approx(8 / 9, abs=1e-12)


def test_variance_is_between_the_bounds_for_a_rotated_mixture():
    # batches' ETFs at a generic relative rotation: strictly inside the Theorem 5.5 interval
    n, m = 12, 4
    etf = torch.from_numpy(theory.simplex_etf(m, 9))
    generator = torch.Generator().manual_seed(7)
    batches = [etf @ torch.linalg.qr(torch.randn(9, 9, generator=generator,
                                                  dtype=torch.float64))[0] for _ in range(3)]
    z = torch.cat(batches)
    stats = geometry.similarity_stats(z, z)
    low, high = theorem_5_5_bounds(n, m)
    assert stats.negative_mean == pytest.approx(-1 / (n - 1), abs=1e-12)
    assert low + 1e-6 < stats.negative_var < high - 1e-6


# ---- Lemma C.4 and Theorem 5.2 ---------------------------------------------------------------


def lemma_c4_terms(u, v):
    """Right-hand-side pieces: tr Var[u - v], ||E[u - v]||^2, ||E[u + v]||^2, E[u] . E[v]."""
    u = u / u.norm(dim=1, keepdim=True)
    v = v / v.norm(dim=1, keepdim=True)
    diff = u - v
    trace_var = (diff - diff.mean(dim=0)).square().sum(dim=1).mean()
    return (
        float(trace_var),
        float(diff.mean(dim=0).square().sum()),
        float((u + v).mean(dim=0).square().sum()),
        float(u.mean(dim=0) @ v.mean(dim=0)),
    )


@pytest.mark.parametrize("seed", range(5))
def test_lemma_c4_identity_corrected(seed):
    """1 - (n-1)/n E[s_pos] + (n-1)/n E[s_neg]
    = 1/2 tr Var[u - v] + 1/4 ||E[u - v]||^2 + 1/4 ||E[u + v]||^2, to 1e-10.

    The paper prints the right side as 1/2 tr Var[u - v] + 1/2 ||E[u + v]||^2; that version is
    off by exactly E[u] . E[v] (next test), a slip in the proof of Lemma C.3.
    """
    n = 6 + seed
    u, v = random_views(n, 3 + seed, seed=10 + seed)
    stats = geometry.similarity_stats(u, v)
    lhs = 1 - (n - 1) / n * stats.positive_mean + (n - 1) / n * stats.negative_mean
    trace_var, diff_sq, sum_sq, _ = lemma_c4_terms(u, v)
    assert lhs == pytest.approx(0.5 * trace_var + 0.25 * diff_sq + 0.25 * sum_sq, abs=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_lemma_c4_as_printed_is_off_by_the_centroid_product(seed):
    n = 7
    u, v = random_views(n, 4, seed=20 + seed)
    stats = geometry.similarity_stats(u, v)
    lhs = 1 - (n - 1) / n * stats.positive_mean + (n - 1) / n * stats.negative_mean
    trace_var, _, sum_sq, centroid_product = lemma_c4_terms(u, v)
    printed_rhs = 0.5 * trace_var + 0.5 * sum_sq
    assert abs(centroid_product) > 1e-3  # the two versions really differ here
    assert printed_rhs - lhs == pytest.approx(centroid_product, abs=1e-10)


@pytest.mark.parametrize("seed", range(10))
def test_theorem_5_2_bound_on_random_embeddings(seed):
    n = 3 + seed
    generator = torch.Generator().manual_seed(30 + seed)
    u = torch.randn(n, 1 + seed % 4, generator=generator, dtype=torch.float64)
    v = -u + 0.3 * torch.randn(u.shape, generator=generator, dtype=torch.float64)
    stats = geometry.similarity_stats(u, v)
    assert stats.positive_mean <= 1 + stats.negative_mean + 1 / (n - 1) + 1e-10


@pytest.mark.parametrize("n,d", [(3, 2), (6, 5)])
def test_theorem_5_2_equality_at_the_full_batch_optimum(n, d):
    etf = torch.from_numpy(theory.simplex_etf(n, d))
    stats = geometry.similarity_stats(etf, etf)
    assert stats.positive_mean == pytest.approx(1 + stats.negative_mean + 1 / (n - 1), abs=1e-10)


def test_theorem_5_2_stated_equality_condition_is_not_sufficient():
    """tr Var[u - v] = 0 and E[u + v] = 0 hold here, yet the bound is strict (0 < 1).

    The corrected Lemma C.4 shows equality needs u_i = v_i and E[u] = 0.
    """
    u = torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64)
    v = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    trace_var, _, sum_sq, _ = lemma_c4_terms(u, v)
    assert trace_var == pytest.approx(0.0, abs=1e-15) and sum_sq == pytest.approx(0.0, abs=1e-15)
    stats = geometry.similarity_stats(u, v)
    bound = 1 + stats.negative_mean + 1 / (2 - 1)
    assert stats.positive_mean == pytest.approx(0.0, abs=1e-15) and bound == pytest.approx(1.0)


# ---- class_similarity_stats ----------------------------------------------------------------


@pytest.mark.parametrize("method", ["moments", "pairs"])
def test_class_similarity_stats_matches_within_view_split(method):
    z, _ = random_views(10, 3, seed=40)
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 2, 0, 1, 3])
    got = geometry.class_similarity_stats(z, labels, method=method, block_size=4)
    reference = loop_reference(z, z, labels.tolist())  # within-view pairs of z, counted twice
    assert got.all_count * 2 == reference["within_count"]
    for ours, theirs in (("all", "within"), ("same_class", "within_same_class"),
                         ("different_class", "within_different_class")):
        assert getattr(got, f"{ours}_mean") == pytest.approx(reference[f"{theirs}_mean"], abs=1e-12)
        assert getattr(got, f"{ours}_var") == pytest.approx(reference[f"{theirs}_var"], abs=1e-12)


# ---- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda u, v: (u, v[:-1], None), "same shape"),
        (lambda u, v: (u[:1], v[:1], None), "at least 2"),
        (lambda u, v: (u, v, torch.zeros(3, dtype=torch.int64)), "labels"),
        (lambda u, v: (u, v, torch.zeros(6)), "labels"),
        (lambda u, v: (u, v, torch.zeros(6, 1, dtype=torch.int64)), "labels"),
        (lambda u, v: (u.clone().fill_(math.nan), v, None), "NaN"),
        (lambda u, v: (u, v.clone().fill_(math.inf), None), "NaN or Inf"),
        (lambda u, v: (u[0], v[0], None), "2-D"),
        (lambda u, v: (u.long(), v.long(), None), "floating-point"),
    ],
)
def test_bad_input_raises_value_error(make, match):
    u, v = random_views(6, 3, seed=50)
    u, v, labels = make(u, v)
    with pytest.raises(ValueError, match=match):
        geometry.similarity_stats(u, v, labels)


def test_bad_method_and_block_size():
    u, v = random_views(6, 3, seed=51)
    with pytest.raises(ValueError, match="method"):
        geometry.similarity_stats(u, v, method="fast")
    with pytest.raises(ValueError, match="block_size"):
        geometry.similarity_stats(u, v, method="pairs", block_size=0)


# ---- streaming ---------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 4, 7, 50])
def test_accumulator_over_batches_equals_one_call(chunk):
    u, v = random_views(23, 4, seed=60)
    labels = torch.arange(23) % 4
    plain, labelled = geometry.SimilarityAccumulator(), geometry.SimilarityAccumulator()
    for rows in torch.arange(23).split(chunk):
        plain.update(u[rows], v[rows])
        labelled.update(u[rows], v[rows], labels[rows])
    assert_stats_match(plain.compute(), loop_reference(u, v))
    assert_stats_match(labelled.compute(), loop_reference(u, v, labels.tolist()))


def test_accumulator_fed_batch_moments_equals_one_call():
    """``add_moments`` of each batch's (labelled or plain) moments, as the similarity monitor
    feeds it, gives the statistics of all pairs of all batches."""
    from contrastkit.geometry._moments import StreamingMoments
    from contrastkit.rows import unit_rows

    u, v = random_views(23, 4, seed=62)
    labels = torch.arange(23) % 4
    accumulator = geometry.SimilarityAccumulator()
    for index, rows in enumerate(torch.arange(23).split(7)):
        batch = StreamingMoments(num_views=2, labelled=index % 2 == 1)
        batch.update((unit_rows(u[rows].double()), unit_rows(v[rows].double())),
                     labels[rows] if batch.labelled else None)
        accumulator.add_moments(batch)
    assert_stats_match(accumulator.compute(), loop_reference(u, v))


def test_moments_added_must_match_views_labels_and_dim():
    from contrastkit.geometry._moments import StreamingMoments

    u, v = random_views(6, 3, seed=63)
    plain = StreamingMoments(num_views=2, labelled=False)
    plain.update((u, v), None)
    labelled = StreamingMoments(num_views=2, labelled=True)
    with pytest.raises(ValueError, match="started with labels"):
        labelled.add(plain)
    with pytest.raises(ValueError, match="cannot add moments of 2 views to moments of 1"):
        StreamingMoments(num_views=1, labelled=False).add(plain)
    narrow = StreamingMoments(num_views=2, labelled=False)
    narrow.update((u[:, :2], v[:, :2]), None)
    with pytest.raises(ValueError, match="every batch must have dim 3, got 2"):
        plain.add(narrow)


def test_accumulator_rejects_inconsistent_batches():
    u, v = random_views(6, 3, seed=61)
    accumulator = geometry.SimilarityAccumulator()
    with pytest.raises(ValueError, match="at least 2 pairs"):
        accumulator.compute()
    accumulator.update(u[:1], v[:1])
    with pytest.raises(ValueError, match="at least 2 pairs"):
        accumulator.compute()
    with pytest.raises(ValueError, match="labels"):
        accumulator.update(u, v, torch.zeros(6, dtype=torch.int64))
    with pytest.raises(ValueError, match="dim"):
        accumulator.update(u[:, :2], v[:, :2])
    with pytest.raises(ValueError, match="same shape"):
        accumulator.update(u, v[:3])
