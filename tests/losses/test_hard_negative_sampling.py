"""The resampling of the hard-negative losses (Jiang et al., arXiv:2311.05139):
:func:`sample_from_rows` draws i.i.d. from each anchor's law ``q_i(j) ∝ eta_1(z_i^T v_j)``.

Goodness of fit to the exact probabilities (chi-square, seeded, with tests that the check
rejects wrong samplers), zero-probability candidates never drawn, the search equal to the
brute-force inverse CDF on chosen uniforms, independence across pairs and slots, the generator
as the only source of randomness, and the loss drawing its negatives with this sampler."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from contrastkit import losses
from contrastkit.losses.hard_negative import CustomPsi, InfoNCEMean
from contrastkit.losses.hard_negative import sampling as hard_negative
from contrastkit.losses.hard_negative.sampling import sample_from_rows

ALPHA = 1e-3  # a correct sampler passes with the seeds below; a wrong one gets p << ALPHA
WIDTH = 37  # candidates per row: not a power of two


def generator(seed):
    return torch.Generator().manual_seed(seed)


def laws(dtype=torch.float64):
    """Log-probabilities of rows that stress the sampler, shape ``(4, WIDTH)``:

    0. moderate tilting over a masked candidate set (zeros at the start, middle and end);
    1. exponential tilting with a large beta (probabilities from ~0.3 down to ~1e-17);
    2. one candidate with almost all the mass (99.8 %), the rest spread over 36;
    3. uniform over every candidate (plain SCL/UCL).
    """
    g = generator(0)
    sims = torch.rand(4, WIDTH, generator=g, dtype=torch.float64) * 2 - 1
    mask = torch.ones(4, WIDTH, dtype=torch.bool)
    mask[0, [0, 1, 12, 13, 14, 30, WIDTH - 2, WIDTH - 1]] = False
    dominant = torch.full((WIDTH,), np.log(2e-3 / (WIDTH - 1)), dtype=torch.float64)
    dominant[5] = np.log1p(-2e-3)
    logits = torch.stack([2.0 * sims[0], 20.0 * sims[1], dominant,
                          torch.zeros(WIDTH, dtype=torch.float64)])
    logits = logits.masked_fill(~mask, -torch.inf)
    return torch.log_softmax(logits, dim=1).to(dtype)


def chisquare_pvalue(counts: torch.Tensor, probabilities: torch.Tensor) -> float:
    """Chi-square goodness of fit of ``counts`` to ``probabilities`` (1-D, same length), the
    cells with an expected count below 5 merged into one (itself merged into the smallest
    other cell if still below 5); cells of probability 0 must be empty and are left out."""
    counts = counts.to(torch.float64).numpy()
    probabilities = probabilities.to(torch.float64).numpy()
    support = probabilities > 0
    assert counts[~support].sum() == 0, "a zero-probability cell was drawn"
    counts, probabilities = counts[support], probabilities[support]
    expected = probabilities / probabilities.sum() * counts.sum()
    small = expected < 5
    observed_cells, expected_cells = list(counts[~small]), list(expected[~small])
    if small.any():
        if expected[small].sum() >= 5 or not observed_cells:
            observed_cells.append(counts[small].sum())
            expected_cells.append(expected[small].sum())
        else:
            smallest = int(np.argmin(expected_cells))
            observed_cells[smallest] += counts[small].sum()
            expected_cells[smallest] += expected[small].sum()
    if len(observed_cells) < 2:
        return 1.0  # one cell: nothing to test
    return float(stats.chisquare(observed_cells, expected_cells).pvalue)


def draw_rows(log_weights, pairs_per_row, k, seed):
    """``pairs_per_row`` pairs for each row (consecutive, as the loss orders them), ``k``
    draws each; returns the draws ``(rows, pairs_per_row * k)``."""
    rows = log_weights.shape[0]
    row_index = torch.arange(rows).repeat_interleave(pairs_per_row)
    drawn = sample_from_rows(log_weights, row_index, k, generator(seed))
    assert drawn.shape == (rows * pairs_per_row, k)
    return drawn.reshape(rows, pairs_per_row * k).long()


def row_counts(drawn_rows, width=WIDTH):
    return torch.stack([torch.bincount(row, minlength=width) for row in drawn_rows])


# ---- goodness of fit -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("chunk_draws", [None, 500])
def test_draws_follow_the_exact_law(dtype, chunk_draws, monkeypatch):
    """Chi-square of each row's counts (120 000 draws) against its exact ``q_i``, for the
    stress rows of :func:`laws`, in both precisions, whole and in chunks of 500 draws."""
    if chunk_draws is not None:
        monkeypatch.setattr(hard_negative, "SAMPLE_CHUNK_DRAWS", chunk_draws)
    log_weights = laws(dtype)
    counts = row_counts(draw_rows(log_weights, pairs_per_row=40, k=3000, seed=1))
    for row in range(log_weights.shape[0]):
        p = chisquare_pvalue(counts[row], log_weights[row].double().exp())
        assert p > ALPHA, f"row {row}: p = {p:.2e}"


def test_the_fit_check_rejects_wrong_samplers():
    """The check of :func:`test_draws_follow_the_exact_law` has power: draws that ignore the
    tilting (uniform over the candidates), draws shifted by one candidate (an off-by-one in
    the inverse CDF) and the exact law of another beta all get p-values far below ALPHA."""
    log_weights = laws()
    draws = 120_000
    g = generator(2)
    tilted = log_weights[1].exp()
    uniform_draws = torch.randint(WIDTH, (draws,), generator=g)
    assert chisquare_pvalue(torch.bincount(uniform_draws, minlength=WIDTH), tilted) < 1e-12
    right = draw_rows(log_weights, pairs_per_row=40, k=3000, seed=1)[0]
    shifted = torch.bincount((right + 1) % WIDTH, minlength=WIDTH)
    shifted[log_weights[0].exp() == 0] = 0  # only test the power, not the never-drawn check
    assert chisquare_pvalue(shifted, log_weights[0].exp()) < 1e-12
    # a milder error: beta 1.8 instead of 2 on row 0
    other_beta = torch.log_softmax(0.9 * log_weights[0], dim=0)
    milder = draw_rows(other_beta.unsqueeze(0), pairs_per_row=40, k=3000, seed=1)[0]
    assert chisquare_pvalue(torch.bincount(milder, minlength=WIDTH),
                            log_weights[0].exp()) < ALPHA


def test_every_search_path_is_exercised():
    """The stress rows have buckets with several CDF steps (the binary search) and buckets
    with at most one (one comparison)."""
    table = hard_negative._InverseCdfTable(laws(), draws=40 * 4 * 3000)
    assert table.crowded.any() and not table.crowded.all()
    assert table.search_steps >= 3


# ---- exactness of the search and the zero-probability candidates -----------------------------

def brute_force_inverse_cdf(log_weights, row_index, u):
    """First ``j`` with ``cdf_j > u``, the CDF formed as the sampler documents it."""
    cdf = log_weights.to(torch.float64).exp().cumsum(dim=1)
    cdf = (cdf / cdf[:, -1:]).to(u.dtype)[row_index]
    return (cdf.unsqueeze(1) <= u.unsqueeze(2)).sum(dim=2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_search_equals_the_brute_force_inverse_cdf(dtype, monkeypatch):
    """On chosen uniforms (0, the largest below 1, every CDF value and its two neighbours,
    random ones) the guide-table search returns exactly the first ``j`` with ``cdf_j > u``,
    which is never a zero-probability candidate and never past the last positive one."""
    log_weights = laws(dtype)
    cdf = log_weights.to(torch.float64).exp().cumsum(dim=1)
    cdf = (cdf / cdf[:, -1:]).to(dtype)
    below_one = torch.nextafter(torch.tensor(1.0, dtype=dtype), torch.tensor(0.0, dtype=dtype))
    rows = log_weights.shape[0]
    uniforms = []
    for row in range(rows):
        values = torch.cat([cdf[row], torch.nextafter(cdf[row], torch.zeros_like(cdf[row])),
                            torch.nextafter(cdf[row], torch.ones_like(cdf[row])),
                            torch.tensor([0.0, below_one], dtype=dtype),
                            torch.rand(500, generator=generator(row), dtype=dtype)])
        uniforms.append(values[(values >= 0) & (values < 1)][:600])
    k = min(len(values) for values in uniforms)
    u = torch.stack([values[:k] for values in uniforms])
    row_index = torch.arange(rows)

    def fixed_rand(shape, *, dtype, device, generator):
        assert tuple(shape) == tuple(u.shape) and dtype == u.dtype
        return u.clone()

    monkeypatch.setattr(torch, "rand", fixed_rand)
    drawn = sample_from_rows(log_weights, row_index, k, generator(0))
    expected = brute_force_inverse_cdf(log_weights, row_index, u)
    assert torch.equal(drawn.long(), expected)
    probabilities = log_weights.exp()
    assert torch.all(probabilities.gather(1, drawn.long()) > 0)


def test_zero_probability_candidates_are_never_drawn():
    """Masked candidates (leading, inner and trailing) and a row with a single candidate left:
    over 600 000 draws none lands off the support."""
    log_weights = laws()
    single = torch.full((WIDTH,), -torch.inf, dtype=torch.float64)
    single[WIDTH - 3] = 0.0  # the last candidate of positive probability, zeros after it
    log_weights = torch.cat([log_weights, single.unsqueeze(0)])
    drawn = draw_rows(log_weights, pairs_per_row=50, k=2400, seed=3)
    assert torch.all(log_weights.gather(1, drawn) > -torch.inf)
    assert torch.all(drawn[-1] == WIDTH - 3)


# ---- independence ------------------------------------------------------------------------------

def product_law_pvalue(first, second, law):
    """Chi-square of the joint counts of ``(first, second)`` against ``law x law``."""
    joint = torch.bincount(first * WIDTH + second, minlength=WIDTH * WIDTH)
    return chisquare_pvalue(joint, torch.outer(law, law).reshape(-1))


def test_pairs_of_one_anchor_draw_independently():
    """Pairs of the same anchor get their own draws (not one row copied), and the draws of two
    pairs, slot by slot, follow the product law."""
    log_weights = laws()
    row_index = torch.zeros(2 * 30_000, dtype=torch.int64)  # 60 000 pairs of anchor 0
    drawn = sample_from_rows(log_weights, row_index, 2, generator(4)).long()
    assert not torch.equal(drawn[0], drawn[1])
    assert not torch.equal(drawn[: drawn.shape[0] // 2], drawn[drawn.shape[0] // 2:])
    even, odd = drawn[0::2, 0], drawn[1::2, 0]  # slot 0 of consecutive pairs
    assert product_law_pvalue(even, odd, log_weights[0].exp()) > ALPHA


def test_slots_of_one_pair_are_independent():
    """The joint law of slots 0 and 1 of a pair factorizes into ``q_i x q_i`` (tilted row 0),
    and the check rejects dependent slots (slot 1 a copy of slot 0)."""
    log_weights = laws()
    drawn = sample_from_rows(log_weights, torch.zeros(60_000, dtype=torch.int64), 2,
                             generator(5)).long()
    law = log_weights[0].exp()
    assert product_law_pvalue(drawn[:, 0], drawn[:, 1], law) > ALPHA
    assert product_law_pvalue(drawn[:, 0], drawn[:, 0], law) < 1e-12


def test_chunks_continue_one_stream(monkeypatch):
    """On the CPU the chunks draw their uniforms one after the other from the generator, so
    the draws do not depend on the chunk size (a chunk put in the wrong place would show)."""
    log_weights = laws()
    row_index = torch.tensor([0, 3, 1, 1, 2, 0, 3, 2, 2, 1, 0])
    whole = sample_from_rows(log_weights, row_index, 50, generator(6))
    monkeypatch.setattr(hard_negative, "SAMPLE_CHUNK_DRAWS", 120)  # 2 pairs a chunk
    chunked = sample_from_rows(log_weights, row_index, 50, generator(6))
    assert torch.equal(whole, chunked)


# ---- the generator -----------------------------------------------------------------------------

def test_same_seed_same_draws_and_the_global_rng_untouched():
    log_weights = laws()
    row_index = torch.tensor([0, 1, 2, 3, 0])
    state = torch.get_rng_state()
    first = sample_from_rows(log_weights, row_index, 64, generator(7))
    second = sample_from_rows(log_weights, row_index, 64, generator(7))
    other = sample_from_rows(log_weights, row_index, 64, generator(8))
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(first, second)
    assert not torch.equal(first, other)


@pytest.mark.cuda
def test_draws_on_the_device_of_the_inputs():
    log_weights = laws(torch.float32).cuda()
    g = torch.Generator(device="cuda").manual_seed(9)
    row_index = torch.arange(4, device="cuda").repeat_interleave(40)
    drawn = sample_from_rows(log_weights, row_index, 3000, g)
    assert drawn.device.type == "cuda"
    counts = row_counts(drawn.reshape(4, -1).long().cpu())
    for row in range(4):
        assert chisquare_pvalue(counts[row], log_weights[row].double().exp().cpu()) > ALPHA


# ---- the loss draws its negatives with the sampler -------------------------------------------

def test_the_loss_draws_its_negatives_with_sample_from_rows():
    """HSCL's sampled differences ``t`` are ``z_i^T (v_n - v_p)`` at the draws of
    :func:`sample_from_rows` on ``q_i`` (tilted, other classes), with the same seed."""
    g = generator(10)
    u = torch.randn(8, 3, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    beta, k = 2.0, 5
    record = []

    def psi(t):
        record.append(t.detach())
        return InfoNCEMean().of_samples(t)

    losses.hscl(u, u, labels, beta=beta, k=k, psi=CustomPsi(psi), generator=generator(11))
    z = torch.nn.functional.normalize(u, dim=1)
    sims = z @ z.T
    same = labels.unsqueeze(1) == labels.unsqueeze(0)
    log_weights = torch.log_softmax((beta * sims).masked_fill(same, -torch.inf), dim=1)
    anchor, positive = same.nonzero(as_tuple=True)
    drawn = sample_from_rows(log_weights, anchor, k, generator(11)).long()
    expected = sims[anchor.unsqueeze(1), drawn] - sims[anchor, positive].unsqueeze(1)
    torch.testing.assert_close(record[0], expected)
