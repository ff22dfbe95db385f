"""The sigmoid loss optimum (Lee, Chang & Sohn 2024, Theorem 2 and its general-(t, b) extension)
and the excessive-separation conditions (8) and (10) of the central paper."""

import math

import numpy as np
import pytest
import torch

from contrastkit import losses, theory

# spec seed-003 §2.10: N, antipodal threshold, ETF threshold (t = b), 4 decimals
THRESHOLDS = [
    (5, 0.2027, 0.5545), (6, 0.3466, 0.9155), (7, 0.4581, 1.1883), (8, 0.5493, 1.4083),
    (10, 0.6931, 1.7513), (12, 0.8047, 2.0141), (16, 0.9730, 2.4046), (20, 1.0986, 2.6916),
    (32, 1.3540, 3.2621), (50, 1.5890, 3.7731), (64, 1.7170, 4.0466), (100, 1.9459, 4.5290),
    (128, 2.0716, 4.7906), (256, 2.4221, 5.5118), (1000, 3.1063, 6.8978),
]

# spec seed-003 §2.11: N, t, b, regime, c*, c2*, delta*, L*  (Brent, tol 1e-15)
INF = math.inf
REFERENCE = [
    (3, 0.5, 0.5, "etf", 1, -0.5, 0, 1.4668891928),
    (3, 5, 5, "etf", 1, -0.5, 0, 0.6942530435),
    (5, 0.1, 0.1, "antipodal", -1, -1, INF, 3.1906943469),
    (5, 0.3, 0.3, "intermediate", 0.0328531766, -0.6126800588, 0.9676691822, 2.7695953994),
    (5, 0.5, 0.5, "intermediate", 0.8782253341, -0.2956654997, 0.2546271015, 2.4072510206),
    (5, 1, 1, "etf", 1, -0.25, 0, 1.7008635059),
    (8, 0.5, 0.5, "antipodal", -1, -1, INF, 3.5060935001),
    (8, 0.75, 0.75, "intermediate", -0.0800953690, -0.6057551581, 1.0835766788, 3.0140555337),
    (8, 1, 1, "intermediate", 0.5187362370, -0.3491130413, 0.5629248278, 2.5772943893),
    (8, 2, 2, "etf", 1, -1 / 7, 0, 1.3711371165),
    (10, 1, 1, "intermediate", 0.0739706585, -0.5226797073, 0.9285732439, 3.0355556342),
    (10, 1.5, 1.5, "intermediate", 0.8101635929, -0.1954828476, 0.3238402603, 2.2311000579),
    (12, 1, 1, "intermediate", -0.2966736533, -0.6803062060, 1.3578034258, 3.4177836948),
    (12, 1.5, 1.5, "intermediate", 0.6003320302, -0.2725763499, 0.4997405880, 2.5577827144),
    (20, 2, 2, "intermediate", 0.5973092580, -0.2433798251, 0.5021012680, 2.6929223771),
    (50, 3, 3, "intermediate", 0.7054488208, -0.1646781286, 0.4155861229, 2.6959236421),
    (100, 4, 4, "intermediate", 0.8562229669, -0.0812633800, 0.2783105617, 2.3229466155),
    (8, 2, 0, "intermediate", -0.2406318815, -0.6745565207, 1.2781896273, 2.5772943893),
    (10, 3, 1, "intermediate", 0.4212459416, -0.3683351371, 0.6381347661, 1.6047198725),
    (16, 1, 0.5, "antipodal", -1, -1, INF, 4.7226124477),
    (8, 1, 3, "etf", 1, -1 / 7, 0, 2.4227053512),
    (8, 10, 10, "etf", 1, -1 / 7, 0, 0.6932233411),
]


@pytest.mark.parametrize("n, antipodal, etf", THRESHOLDS)
def test_thresholds_reproduce_the_spec_table(n, antipodal, etf):
    thresholds = theory.sigmoid_thresholds(n)
    assert thresholds.antipodal == pytest.approx(antipodal, abs=5e-5)
    assert thresholds.etf == pytest.approx(etf, abs=5e-5)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_small_n_is_always_etf(n):
    assert theory.sigmoid_thresholds(n) == theory.SigmoidThresholds(0.0, 0.0)
    for t in (0.01, 0.3, 3.0):
        assert theory.sigmoid_optimum(n, t, t).regime == "etf"


@pytest.mark.parametrize("n, t, b, regime, c, c2, delta, loss", REFERENCE)
def test_reference_rows(n, t, b, regime, c, c2, delta, loss):
    opt = theory.sigmoid_optimum(n, t, b)
    assert opt.regime == regime
    assert opt.positive_similarity == pytest.approx(c, abs=1e-9)
    assert opt.negative_similarity == pytest.approx(c2, abs=1e-9)
    assert opt.delta == pytest.approx(delta, abs=1e-9) if delta != INF else opt.delta == INF
    assert opt.normalized_positive == pytest.approx((1 + c) / 2, abs=1e-9)
    assert opt.loss == pytest.approx(loss, abs=1e-9)


def test_closed_form_losses_at_t_equal_b():
    # spec §2.11: ETF loss log 2 + (N-1) sp(-tN/(N-1)); antipodal loss sp(2t) + (N-1) sp(-2t)
    sp = lambda x: np.logaddexp(0, x)  # noqa: E731
    for n, t in [(8, 3.0), (20, 4.0), (1000, 10.0)]:
        assert theory.sigmoid_optimum(n, t, t).loss == pytest.approx(
            math.log(2) + (n - 1) * sp(-t * n / (n - 1)), rel=1e-12)
    for n, t in [(8, 0.3), (100, 1.0)]:
        assert theory.sigmoid_optimum(n, t, t).loss == pytest.approx(
            sp(2 * t) + (n - 1) * sp(-2 * t), rel=1e-12)


def _theorem_2_root(n, t):
    """The paper's own route for t = b in the middle regime (App. B.4), as an independent
    reference: the root of g = (4-N) + 2 exp(B) - (N-2) exp(-A), with A = t(1-c) and
    B = A + t N (1+c) / (2(N-1)), in the positive similarity c."""
    from scipy.optimize import brentq

    def g(c):
        a = t * (1.0 - c)
        b_exponent = a + t * n * (1.0 + c) / (2 * (n - 1))
        return (4 - n) + 2 * math.exp(b_exponent) - (n - 2) * math.exp(-a)

    return brentq(g, -1.0, 1.0, xtol=1e-15)


def test_theorem_2_root_agrees_with_the_convex_reduction():
    for n in (5, 8, 13, 40, 1000, 10**6):
        thresholds = theory.sigmoid_thresholds(n)
        for t in np.linspace(0.05, 8, 41):
            opt = theory.sigmoid_optimum(n, t, t)
            if thresholds.antipodal < t < thresholds.etf:
                assert opt.positive_similarity == pytest.approx(_theorem_2_root(n, t), abs=1e-9)
            else:
                assert opt.regime == ("etf" if t >= thresholds.etf else "antipodal")


def test_delta_decreases_in_t():
    for n in (6, 20, 300):
        deltas = [theory.sigmoid_optimum(n, t, t).delta for t in np.linspace(0.05, 8, 60)]
        assert all(a >= b for a, b in zip(deltas, deltas[1:], strict=False))


def test_optimum_loss_equals_library_siglip_on_the_ccem():
    # papers' (t, b) = (scale, -bias) of losses.siglip; the loss is the paper's 1/N form
    for n, t, b in [(5, 0.3, 0.3), (8, 2, 0), (10, 3, 1), (8, 1, 3), (16, 1, 0.5)]:
        opt = theory.sigmoid_optimum(n, t, b)
        u, v = theory.ccem(n, n, opt.delta)
        value = losses.siglip(torch.from_numpy(u), torch.from_numpy(v), scale=t, bias=-b)
        assert float(value) == pytest.approx(opt.loss, abs=1e-10)
        sims = u @ v.T
        assert np.diag(sims) == pytest.approx(opt.positive_similarity, abs=1e-12)
        assert (u @ u.T)[0, 1] == pytest.approx(opt.within_similarity, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_no_embedding_beats_the_optimum(seed):
    # Corollary 2 / Jensen (spec §2.13.4): any unit U, V has loss >= L*
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 12)), int(rng.integers(1, 14))
    t, b = float(rng.uniform(0.1, 5)), float(rng.uniform(-2, 5))
    u, v = (torch.from_numpy(rng.standard_normal((n, d))) for _ in range(2))
    value = float(losses.siglip(u, v, scale=t, bias=-b))
    assert value >= theory.sigmoid_optimum(n, t, b).loss - 1e-12


def test_condition_10_is_exactly_not_etf():
    # Example 5.4's (10) (central paper) and the sigmoid paper's ETF condition agree
    for n in (3, 5, 8, 30, 1000):
        for t in (0.1, 0.5, 1.0, 2.5, 7.0):
            for b in (-2.0, 0.0, 0.7, 3.0, 10.0):
                opt = theory.sigmoid_optimum(n, t, b)
                assert theory.sigmoid_excessive_separation(n, t, b) == opt.excessively_separated
                assert opt.excessively_separated == (opt.regime != "etf")
                if opt.excessively_separated:
                    assert opt.negative_similarity < -1 / (n - 1)


def test_condition_8_with_the_sigmoid_phi_psi_is_condition_10():
    for n in (5, 30):
        for t, b in [(0.5, 0.5), (2.0, 0.0), (5.0, 1.0), (10.0, 10.0), (1.0, 3.0)]:
            phi = lambda x, t=t, b=b: -np.logaddexp(0, -t * x + b)  # noqa: E731
            psi = lambda x, t=t, b=b, n=n: (n - 1) * np.logaddexp(0, t * x - b)  # noqa: E731
            expected = theory.sigmoid_excessive_separation(n, t, b)
            assert theory.excessive_separation(phi, psi, n) == expected


def test_condition_8_for_other_table_3_losses():
    # spectral (phi = x, psi = x^2): psi'(-1/(n-1)) < 0, so (8) never holds
    assert not theory.excessive_separation(lambda x: x, lambda x: x**2, 10)
    # a loss that weights negatives heavily separates excessively
    assert theory.excessive_separation(lambda x: x, lambda x: 50 * x, 10)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: theory.sigmoid_optimum(1, 1.0, 1.0), "n"),
        (lambda: theory.sigmoid_optimum(5, 0.0, 1.0), "t"),
        (lambda: theory.sigmoid_optimum(5, -1.0, 1.0), "t"),
        (lambda: theory.sigmoid_optimum(5, 1.0, float("nan")), "b"),
        (lambda: theory.sigmoid_thresholds(1), "n"),
        (lambda: theory.sigmoid_excessive_separation(5, 0.0, 0.0), "t"),
        (lambda: theory.excessive_separation(lambda x: x, lambda x: x, 1), "n"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()


# ---- the regime on both sides of every threshold ------------------------------------------

EDGE_N = [*range(2, 60), 100, 157, 190, 197, 1000, 22_039, 22_040, 32_768, 10**5, 10**6]


@pytest.mark.parametrize("n", EDGE_N)
def test_the_regime_switches_exactly_at_the_t_thresholds(n):
    """ETF exactly when t >= thresholds.etf, antipodal exactly when t <= thresholds.antipodal,
    down to the last ulp, and condition (10) agrees (it is the ETF test negated)."""
    thresholds = theory.sigmoid_thresholds(n)
    closed_form = (
        (0.5 * math.log((n - 2) / 2), (n - 1) / n * math.log(n - 3)) if n > 4 else (0.0, 0.0)
    )
    assert thresholds.antipodal == pytest.approx(closed_form[0], rel=1e-14, abs=0)
    assert thresholds.etf == pytest.approx(closed_form[1], rel=1e-14, abs=0)
    if n <= 4:
        return  # ETF for every t > 0
    just_below = math.nextafter(thresholds.etf, 0.0)
    assert theory.sigmoid_optimum(n, thresholds.etf, thresholds.etf).regime == "etf"
    assert theory.sigmoid_optimum(n, just_below, just_below).regime == "intermediate"
    assert not theory.sigmoid_excessive_separation(n, thresholds.etf, thresholds.etf)
    assert theory.sigmoid_excessive_separation(n, just_below, just_below)
    just_above = math.nextafter(thresholds.antipodal, math.inf)
    assert theory.sigmoid_optimum(n, thresholds.antipodal, thresholds.antipodal).regime == (
        "antipodal")
    assert theory.sigmoid_optimum(n, just_above, just_above).regime == "intermediate"


def _largest_n(holds, start=2):
    """The largest n >= start with holds(n), for a holds true up to a point and false beyond."""
    low, high = start, start + 1
    while holds(high):
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


def _regime_printed(capsys, n, t, b):
    from contrastkit import cli

    assert cli.main(["theory", "sigmoid", "--n", str(n), "--t", repr(t), "--b", repr(b)]) == 0
    return _regime_printed_in(capsys.readouterr().out.splitlines())


def _regime_printed_in(rows):
    (line,) = [row for row in rows if row.split()[0] == "regime"]
    labels = {"simplex ETF": "etf", "antipodal": "antipodal", "in between": "intermediate"}
    return next(regime for label, regime in labels.items() if label in line)


@pytest.mark.parametrize("t", [1.0, 2.5, 5.0, 10.0, 12.5])
def test_the_regime_on_both_sides_of_the_batch_size_thresholds(t, capsys):
    """t = b fixed: the ETF holds up to the largest N whose threshold (by the library's own
    sigmoid_thresholds) is <= t, and not at N + 1; the antipodal likewise from the smallest N
    whose antipodal threshold is >= t. Through the function and the command's output."""
    last_etf = _largest_n(lambda n: theory.sigmoid_thresholds(n).etf <= t)
    first_antipodal = _largest_n(lambda n: theory.sigmoid_thresholds(n).antipodal < t) + 1
    expected = {last_etf: "etf", last_etf + 1: "intermediate",
                first_antipodal - 1: "intermediate", first_antipodal: "antipodal"}
    for n, regime in expected.items():
        assert theory.sigmoid_optimum(n, t, t).regime == regime, n
        assert _regime_printed(capsys, n, t, t) == regime, n


def _exact_regime(n, t, b):
    """The regime from the exact conditions in 60-digit arithmetic: antipodal iff
    t + b <= log((N-2)/2); ETF iff (N-2)/2 (1 + e^(t-b)) <= 1 + e^(t/(N-1) + b)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(60):
        t, b = mpmath.mpf(t), mpmath.mpf(b)
        if n > 2 and t + b <= mpmath.log(mpmath.mpf(n - 2) / 2):
            return "antipodal"
        etf = (n - 2) * (1 + mpmath.exp(t - b)) / 2 <= 1 + mpmath.exp(t / (n - 1) + b)
        return "etf" if etf else "intermediate"


@pytest.mark.parametrize("t, b", [(10.0, 10.0), (2.0, 0.5), (1.0, 3.0), (5.0, 1.0), (0.3, 2.0)])
def test_the_regime_matches_the_exact_conditions_on_both_sides_of_each_boundary(t, b, capsys):
    last_etf = _largest_n(lambda n: _exact_regime(n, t, b) == "etf")
    first_antipodal = _largest_n(lambda n: _exact_regime(n, t, b) != "antipodal") + 1
    for n in (last_etf, last_etf + 1, first_antipodal - 1, first_antipodal):
        regime = _exact_regime(n, t, b)
        assert theory.sigmoid_optimum(n, t, b).regime == regime, n
        assert theory.sigmoid_excessive_separation(n, t, b) == (regime != "etf"), n
        assert _regime_printed(capsys, n, t, b) == regime, n


@pytest.mark.parametrize("n, t", [(22_039, 10.0), (22_040, 10.0), (157, 5.0), (156, 5.0),
                                  (5, 0.2027325540540822), (5, 0.5545177444479563)])
def test_the_printed_thresholds_agree_with_the_printed_regime(n, t, capsys):
    """Reading the command's output, t against the printed thresholds gives the printed regime
    (at n = 22 040 the ETF threshold is 10.0000244: rounded to 10, it contradicted t = 10)."""
    from contrastkit import cli

    assert cli.main(["theory", "sigmoid", "--n", str(n), "--t", repr(t), "--b", repr(t)]) == 0
    rows = capsys.readouterr().out.splitlines()
    antipodal = float(next(row for row in rows if "antipodal <=" in row).split()[-1])
    etf = float(next(row for row in rows if "ETF >=" in row).split()[-1])
    regime = "etf" if t >= etf else "antipodal" if t <= antipodal else "intermediate"
    assert _regime_printed_in(rows) == regime
