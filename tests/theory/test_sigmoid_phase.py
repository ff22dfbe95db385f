"""Where a learned SigLIP (scale, bias) sits on the sigmoid loss's phase diagram (Lee, Chang &
Sohn 2024): phase_point's record and phase_regions' grid, against sigmoid_optimum and against the
paper's closed forms computed here independently."""

import math

import numpy as np
import pytest

from contrastkit import theory
from contrastkit.theory import PHASE_REGIMES, phase_point, phase_regions

THEORY_KEYS = {"siglip_t", "siglip_b", "siglip_regime", "siglip_predicted_pos",
               "siglip_predicted_neg"}

# spec seed-003 §2.11 (Brent, tol 1e-15), the paper's convention: N, t, b, regime, c*, c2*
REFERENCE = [
    (3, 0.5, 0.5, "etf", 1.0, -0.5),
    (5, 0.1, 0.1, "antipodal", -1.0, -1.0),
    (5, 0.3, 0.3, "intermediate", 0.0328531766, -0.6126800588),
    (5, 0.5, 0.5, "intermediate", 0.8782253341, -0.2956654997),
    (8, 0.5, 0.5, "antipodal", -1.0, -1.0),
    (8, 0.75, 0.75, "intermediate", -0.0800953690, -0.6057551581),
    (8, 1, 1, "intermediate", 0.5187362370, -0.3491130413),
    (8, 2, 2, "etf", 1.0, -1 / 7),
    (12, 1.5, 1.5, "intermediate", 0.6003320302, -0.2725763499),
    (100, 4, 4, "intermediate", 0.8562229669, -0.0812633800),
    (8, 2, 0, "intermediate", -0.2406318815, -0.6745565207),
    (10, 3, 1, "intermediate", 0.4212459416, -0.3683351371),
    (16, 1, 0.5, "antipodal", -1.0, -1.0),
    (8, 1, 3, "etf", 1.0, -1 / 7),
    (8, 10, 10, "etf", 1.0, -1 / 7),
]


@pytest.mark.parametrize("n, t, b, regime, positive, negative", REFERENCE)
def test_reference_rows_of_the_spec(n, t, b, regime, positive, negative):
    point = phase_point(n, scale=t, bias=-b)  # t = scale, b = -bias
    assert set(point) == THEORY_KEYS
    assert point["siglip_t"] == t and point["siglip_b"] == b
    assert point["siglip_regime"] == regime
    assert point["siglip_predicted_pos"] == pytest.approx(positive, abs=1e-9)
    assert point["siglip_predicted_neg"] == pytest.approx(negative, abs=1e-9)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 64, 4096])
@pytest.mark.parametrize("scale, bias", [(0.3, -0.3), (1.0, 2.0), (10.0, -10.0), (50.0, -12.0),
                                         (2.5, 0.0), (7.0, -1.0)])
def test_the_record_is_sigmoid_optimum_exactly(n, scale, bias):
    point = phase_point(n, scale, bias)
    optimum = theory.sigmoid_optimum(n, scale, -bias)
    assert point == {"siglip_t": scale, "siglip_b": -bias, "siglip_regime": optimum.regime,
                     "siglip_predicted_pos": optimum.positive_similarity,
                     "siglip_predicted_neg": optimum.negative_similarity}
    assert all(type(point[key]) is float for key in THEORY_KEYS - {"siglip_regime"})


def test_sign_convention_siglip_init_is_t_equal_b_equal_10():
    # SigLIP initializes scale = 10, bias = -10: the paper's t = b = 10, the ETF for n = 8
    point = phase_point(8, scale=10.0, bias=-10.0)
    assert (point["siglip_t"], point["siglip_b"]) == (10.0, 10.0)
    assert point["siglip_regime"] == "etf"
    assert point["siglip_predicted_pos"] == 1.0
    assert point["siglip_predicted_neg"] == pytest.approx(-1 / 7, abs=1e-15)
    # the other sign of the bias is t = 10, b = -10: t + b = 0 <= log((8-2)/2), antipodal
    flipped = phase_point(8, scale=10.0, bias=10.0)
    assert flipped["siglip_b"] == -10.0 and flipped["siglip_regime"] == "antipodal"
    assert phase_point(8, 3.0, 0.0)["siglip_b"] == 0.0
    assert math.copysign(1.0, phase_point(8, 3.0, 0.0)["siglip_b"]) == 1.0  # not -0.0


@pytest.mark.parametrize("n", [5, 6, 8, 16, 64, 1000])
def test_theorem_2_thresholds_from_the_closed_forms(n):
    """On t = b: antipodal iff t < (1/2) log((N-2)/2), ETF iff t > ((N-1)/N) log(N-3)
    (Theorem 2), with the ETF's negatives at -1/(N-1) (Definition 1), the antipodal ones at -1
    (Definition 2) and, in between, those of the CCEM, c2 = ((N-2) c - N) / (2(N-1)) (Lemma 1,
    Proposition 1)."""
    antipodal = 0.5 * math.log((n - 2) / 2)
    etf = (n - 1) / n * math.log(n - 3)

    def at(t):
        return phase_point(n, scale=t, bias=-t)

    for t in (antipodal * (1 - 1e-6), antipodal / 2):
        point = at(t)
        assert point["siglip_regime"] == "antipodal"
        assert (point["siglip_predicted_pos"], point["siglip_predicted_neg"]) == (-1.0, -1.0)
    for t in (antipodal * (1 + 1e-6), (antipodal + etf) / 2, etf * (1 - 1e-6)):
        point = at(t)
        c = point["siglip_predicted_pos"]
        assert point["siglip_regime"] == "intermediate" and -1.0 < c < 1.0
        assert point["siglip_predicted_neg"] == pytest.approx(
            ((n - 2) * c - n) / (2 * (n - 1)), abs=1e-14)
    for t in (etf * (1 + 1e-6), 2 * etf, 10.0 + etf):
        point = at(t)
        assert point["siglip_regime"] == "etf"
        assert point["siglip_predicted_pos"] == 1.0
        assert point["siglip_predicted_neg"] == pytest.approx(-1 / (n - 1), abs=1e-15)


def test_predicted_positive_similarity_grows_along_t_equal_b():
    # Theorem 2: delta* decreases in t, so u_i . v_i rises from -1 (antipodal) to 1 (ETF)
    points = [phase_point(20, t, -t) for t in np.linspace(0.2, 4, 40)]
    positives = [point["siglip_predicted_pos"] for point in points]
    assert positives[0] == -1.0 and positives[-1] == 1.0
    assert all(a <= b for a, b in zip(positives, positives[1:], strict=False))
    # strictly between the thresholds 1.0986 and 2.6916 (spec §2.10): 16 of the 40 points
    middle = [point["siglip_predicted_pos"] for point in points
              if point["siglip_regime"] == "intermediate"]
    assert len(middle) == 16 and len(set(middle)) == 16


def test_measured_values_are_passed_through_beside_the_prediction():
    point = phase_point(8, 1.0, -1.0, measured_positive=0.25, measured_negative=-0.125)
    assert set(point) == THEORY_KEYS | {"siglip_measured_pos", "siglip_measured_neg"}
    assert (point["siglip_measured_pos"], point["siglip_measured_neg"]) == (0.25, -0.125)
    assert point["siglip_predicted_pos"] == pytest.approx(0.5187362370, abs=1e-9)  # unchanged
    only = phase_point(8, 1.0, -1.0, measured_negative=np.float32(-0.5))
    assert set(only) == THEORY_KEYS | {"siglip_measured_neg"}
    assert type(only["siglip_measured_neg"]) is float and only["siglip_measured_neg"] == -0.5
    diverged = phase_point(8, 1.0, -1.0, math.nan, math.nan)
    assert math.isnan(diverged["siglip_measured_pos"]) and math.isnan(
        diverged["siglip_measured_neg"])


@pytest.mark.parametrize("dim, exact", [(8, 1.0), (9, 1.0), (512, 1.0), (7, 0.0), (1, 0.0)])
def test_theory_exact_only_for_d_at_least_n(dim, exact):
    point = phase_point(8, 1.0, -1.0, dim=dim)
    assert point["siglip_theory_exact"] == exact
    assert set(point) == THEORY_KEYS | {"siglip_theory_exact"}
    assert "siglip_theory_exact" not in phase_point(8, 1.0, -1.0)


@pytest.mark.parametrize("arguments, message", [
    ((1, 1.0, -1.0), "n must be >= 2"),
    ((0, 1.0, -1.0), "n must be >= 2"),
    ((8.0, 1.0, -1.0), "n must be an integer"),
    ((True, 1.0, -1.0), "n must be an integer"),
    ((8, 0.0, -1.0), "scale must be > 0"),
    ((8, -2.0, -1.0), "scale must be > 0"),
    ((8, math.nan, -1.0), "scale must be finite"),
    ((8, math.inf, -1.0), "scale must be finite"),
    ((8, 1.0, math.nan), "bias must be finite"),
    ((8, 1.0, -math.inf), "bias must be finite"),
    ((8, "10", -1.0), "scale must be a number"),
    ((8, 1.0, None), "bias must be a number"),
    ((8, 1.0, -1.0, "0.5"), "measured_positive must be a number"),
    ((8, 1.0, -1.0, None, True), "measured_negative must be a number"),
])
def test_bad_input_is_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        phase_point(*arguments)


@pytest.mark.parametrize("dim", [0, -3, 2.5, True])
def test_bad_dim_is_refused(dim):
    with pytest.raises(ValueError, match="dim must be"):
        phase_point(8, 1.0, -1.0, dim=dim)


def test_regime_codes_are_ordered_by_the_optimal_positive_similarity():
    assert PHASE_REGIMES == ("antipodal", "intermediate", "etf")


@pytest.mark.parametrize("n", [2, 3, 5, 8, 64, 4096])
def test_regions_grid_agrees_with_scalar_calls(n):
    thresholds = theory.sigmoid_thresholds(n)
    # non-square, with the thresholds themselves (exact float boundaries of the regime test)
    ts = [0.05, 0.3, thresholds.antipodal or 0.7, 1.0, thresholds.etf or 2.0, 3.0, 10.0, 40.0]
    bs = [-10.0, -1.0, 0.0, thresholds.antipodal, 0.5, thresholds.etf, 2.0, 5.0, 10.0, 30.0, 60.0]
    codes = phase_regions(n, ts, bs)
    assert codes.shape == (len(bs), len(ts)) and np.issubdtype(codes.dtype, np.integer)
    for row, b in enumerate(bs):
        for column, t in enumerate(ts):
            assert PHASE_REGIMES[codes[row, column]] == theory.sigmoid_optimum(n, t, b).regime, (
                f"n={n}, t={t}, b={b}")


def test_regions_grid_on_the_t_equal_b_diagonal_follows_theorem_2():
    n = 8
    t = np.array([0.25, 0.5, 0.6, 1.0, 1.4, 1.5, 3.0, 10.0])
    diagonal = phase_regions(n, t, t).diagonal()
    antipodal, etf = 0.5 * math.log((n - 2) / 2), (n - 1) / n * math.log(n - 3)
    expected = [0 if x < antipodal else 2 if x > etf else 1 for x in t]
    assert diagonal.tolist() == expected == [0, 0, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize("n", [5, 8, 32, 256])
def test_regions_grid_against_the_general_closed_forms(n):
    """The extension of Theorem 2 to any (t, b) (spec seed-003 §2.9), here in plain numpy:
    antipodal iff t + b <= log((N-2)/2); ETF iff 2(1 + e^{t/(N-1) + b}) >= (N-2)(1 + e^{t-b}).
    Cells within a relative 1e-9 of either boundary are skipped (rounding decides them)."""
    ts = np.linspace(0.05, 12.0, 61)
    bs = np.linspace(-6.0, 12.0, 47)
    t, b = np.meshgrid(ts, bs)
    codes = phase_regions(n, ts, bs)
    antipodal_margin = np.log((n - 2) / 2) - (t + b)
    etf_left = np.log(2.0) + np.logaddexp(0.0, t / (n - 1) + b)
    etf_margin = etf_left - (np.log(n - 2) + np.logaddexp(0.0, t - b))
    expected = np.where(etf_margin >= 0, 2, np.where(antipodal_margin >= 0, 0, 1))
    clear = (np.abs(antipodal_margin) > 1e-9 * (1 + np.abs(t + b))) & (
        np.abs(etf_margin) > 1e-9 * (1 + np.abs(etf_left)))
    assert clear.mean() > 0.95
    np.testing.assert_array_equal(codes[clear], expected[clear])
    assert set(np.unique(codes)) == {0, 1, 2}  # the grid crosses all three regions


@pytest.mark.parametrize("n", [2, 3, 4])
def test_regions_for_n_at_most_4_are_the_etf_on_t_equal_b(n):
    t = np.linspace(0.01, 5.0, 30)
    assert (phase_regions(n, t, t).diagonal() == 2).all()


@pytest.mark.parametrize("n, ts, bs, message", [
    (1, [1.0], [1.0], "n must be >= 2"),
    (8, [0.0, 1.0], [1.0], "t_values must be > 0"),
    (8, [1.0, -1.0], [1.0], "t_values must be > 0"),
    (8, [1.0, math.nan], [1.0], "t_values must be finite"),
    (8, [1.0], [math.inf], "b_values must be finite"),
    (8, [], [1.0], "t_values must be a non-empty one-dimensional"),
    (8, [1.0], [[1.0, 2.0]], "b_values must be a non-empty one-dimensional"),
    (8, 1.0, [1.0], "t_values must be a non-empty one-dimensional"),
    (8, ["a"], [1.0], "t_values must be a sequence of numbers"),
])
def test_bad_grids_are_refused(n, ts, bs, message):
    with pytest.raises(ValueError, match=message):
        phase_regions(n, ts, bs)
