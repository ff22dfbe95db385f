"""mine_hard_negatives against a brute-force float64 loop over every (query, corpus item) pair:
the filters, the exclusions, the tie rule (lower corpus index first), rows left with fewer than
k negatives, and independence from the chunk sizes."""

import math

import pytest
import torch

from contrastkit.evaluate import Relevance, mine_hard_negatives


def brute_force(queries, corpus, k, positives=None, exclude=(), max_score=None, margin=None,
                relative_margin=None, cosine=False):
    """Per query, the list of (corpus index, score) of its negatives, by the module's rules,
    from a loop in float64."""
    q, c = queries.double(), corpus.double()
    p = None if positives is None else positives.double()
    if cosine:
        q, c = (torch.nn.functional.normalize(x, dim=1) for x in (q, c))
        p = None if p is None else torch.nn.functional.normalize(p, dim=1)
    result = []
    for i in range(q.shape[0]):
        positive = None if p is None else float(q[i] @ p[i])
        candidates = []
        for j in range(c.shape[0]):
            s = float(q[i] @ c[j])
            if exclude and j in exclude[i]:
                continue
            if max_score is not None and s > max_score:
                continue
            if margin is not None and s > positive - margin:
                continue
            if relative_margin is not None and s > positive * (1 - relative_margin):
                continue
            candidates.append((-s, j))
        result.append([(j, -s) for s, j in sorted(candidates)[:k]])
    return result


def as_lists(mined):
    return [[(int(j), float(s)) for j, s in zip(row_j[:n], row_s[:n], strict=True)]
            for row_j, row_s, n in zip(mined.indices, mined.scores, mined.counts.tolist(),
                                       strict=True)]


def integer_embeddings(rows, dim, generator):
    """Small integer entries: dot products are exact in any order of summation, so ties are
    ties on every machine."""
    return torch.randint(-2, 3, (rows, dim), generator=generator).double()


@pytest.mark.parametrize("chunks", [(1024, 65536), (3, 5), (1, 1), (7, 64)])
def test_ties_go_to_the_lower_corpus_index_whatever_the_chunks(chunks):
    generator = torch.Generator().manual_seed(0)
    queries = integer_embeddings(13, 3, generator)  # few distinct scores: many ties
    corpus = integer_embeddings(40, 3, generator)
    expected = brute_force(queries, corpus, 6)
    assert sum(len({s for _, s in row}) < len(row) for row in expected) > 5  # ties inside
    mined = mine_hard_negatives(queries, corpus, 6, score="dot", query_chunk=chunks[0],
                                corpus_chunk=chunks[1])
    assert as_lists(mined) == expected
    assert mined.indices.dtype == torch.int64 and mined.positive_scores is None


@pytest.mark.parametrize("chunks", [(1024, 65536), (4, 6), (1, 3)])
def test_filters_and_exclusions_leave_what_the_loop_leaves(chunks):
    generator = torch.Generator().manual_seed(1)
    queries = integer_embeddings(11, 4, generator)
    corpus = integer_embeddings(30, 4, generator)
    positives = integer_embeddings(11, 4, generator)
    exclude = [torch.randperm(30, generator=generator)[:i % 4].tolist() for i in range(11)]
    for filters in ({"max_score": 2.0}, {"margin": 1.0}, {"relative_margin": 0.5},
                    {"max_score": 3.0, "margin": 0.0, "relative_margin": 0.25}):
        expected = brute_force(queries, corpus, 5, positives, exclude, **filters)
        mined = mine_hard_negatives(queries, corpus, 5, positives=positives, exclude=exclude,
                                    score="dot", query_chunk=chunks[0], corpus_chunk=chunks[1],
                                    **filters)
        assert as_lists(mined) == expected, filters
        assert mined.positive_scores.tolist() == (queries * positives).sum(1).tolist()


def test_rows_with_fewer_than_k_candidates_are_padded():
    generator = torch.Generator().manual_seed(2)
    queries = integer_embeddings(9, 3, generator)
    corpus = integer_embeddings(8, 3, generator)
    expected = brute_force(queries, corpus, 6, max_score=0.0)
    counts = [len(row) for row in expected]
    assert min(counts) < 6 and max(counts) > 0  # some short rows
    mined = mine_hard_negatives(queries, corpus, 6, max_score=0.0, score="dot", corpus_chunk=3)
    assert as_lists(mined) == expected and mined.counts.tolist() == counts
    padding = torch.arange(6)[None, :] >= mined.counts[:, None]
    assert (mined.indices[padding] == -1).all() and (mined.scores[padding] == -math.inf).all()
    # k beyond the corpus: every candidate, then padding
    every = mine_hard_negatives(queries, corpus, 20, score="dot")
    assert every.counts.tolist() == [8] * 9 and as_lists(every) == brute_force(queries, corpus,
                                                                                20)


def test_cosine_scores_of_random_embeddings_match_float64():
    generator = torch.Generator().manual_seed(3)
    queries, corpus = torch.randn(20, 16, generator=generator), torch.randn(300, 16,
                                                                            generator=generator)
    positives = queries + 0.5 * torch.randn(20, 16, generator=generator)
    exclude = Relevance(torch.arange(21), torch.randint(0, 300, (20,), generator=generator))
    expected = brute_force(queries.double(), corpus.double(), 4, positives.double(),
                           [[int(j)] for j in exclude.indices], margin=0.05, cosine=True)
    mined = mine_hard_negatives(queries.double(), corpus.double(), 4,
                                positives=positives.double(), exclude=exclude, margin=0.05,
                                corpus_chunk=37, query_chunk=6)
    assert [[j for j, _ in row] for row in as_lists(mined)] == [[j for j, _ in row]
                                                                 for row in expected]
    assert mined.scores.double().flatten().tolist() == pytest.approx(
        [s for row in expected for _, s in row], abs=1e-12)
    # float32 embeddings: the same negatives (no near-ties in these), float32 scores
    single = mine_hard_negatives(queries, corpus, 4, positives=positives, exclude=exclude,
                                 margin=0.05)
    assert single.scores.dtype == torch.float32
    assert torch.equal(single.indices, mined.indices)


def test_a_margin_compares_in_float64_and_rounds_the_ceiling_down():
    # float32 scores of exactly 0.5 and 0.25; the positive's score 0.75; margin 0.25 keeps
    # 0.5 (<= 0.75 - 0.25 exactly), margin 0.25 + 1e-9 does not (0.75 - it rounds to 0.5 in
    # float32, to nearest)
    queries = torch.tensor([[1.0, 0.0]])
    corpus = torch.tensor([[0.5, 1.0], [0.25, 2.0]])
    positives = torch.tensor([[0.75, 0.0]])
    kept = mine_hard_negatives(queries, corpus, 2, positives=positives, margin=0.25,
                               score="dot")
    assert kept.indices.tolist() == [[0, 1]]
    tighter = mine_hard_negatives(queries, corpus, 2, positives=positives, margin=0.25 + 1e-9,
                                  score="dot")
    assert tighter.indices.tolist() == [[1, -1]] and tighter.counts.tolist() == [1]


@pytest.mark.parametrize("call, message", [
    (lambda q, c: mine_hard_negatives(q, c, 0), "k must be >= 1"),
    (lambda q, c: mine_hard_negatives(q, c, 2, margin=0.1), "margin compares each candidate"),
    (lambda q, c: mine_hard_negatives(q, c, 2, positives=q, margin=-0.1), "margin must be >= 0"),
    (lambda q, c: mine_hard_negatives(q, c, 2, positives=q, relative_margin=1.0),
     r"relative_margin \(the share below the positive's score\) must be in \[0, 1\)"),
    (lambda q, c: mine_hard_negatives(q, c, 2, positives=q[:2]), "positives must have one row"),
    (lambda q, c: mine_hard_negatives(q, c, 2, max_score=math.nan), "max_score must be finite"),
    (lambda q, c: mine_hard_negatives(q, c, 2, exclude=[[0]] * 3 + [[9]]),
     r"exclude must hold corpus indices in \[0, 5\)"),
    (lambda q, c: mine_hard_negatives(q, c, 2, exclude=[[0]]), "exclude must have one entry"),
    (lambda q, c: mine_hard_negatives(q, c[:, :2], 2), "corpus must have 3 columns"),
    (lambda q, c: mine_hard_negatives(q, c, 2, score="l2"), "score must be one of"),
    (lambda q, c: mine_hard_negatives(q * 1e30, c * 1e30, 2, score="dot"), "overflow"),
])
def test_bad_input_is_named(call, message):
    queries, corpus = torch.ones(4, 3), torch.ones(5, 3)
    with pytest.raises(ValueError, match=message):
        call(queries, corpus)


@pytest.mark.cuda
def test_a_gpu_mines_what_the_loop_mines_from_a_corpus_left_on_the_cpu():
    generator = torch.Generator().manual_seed(4)
    queries = integer_embeddings(50, 4, generator)
    corpus = integer_embeddings(400, 4, generator)
    positives = integer_embeddings(50, 4, generator)
    expected = brute_force(queries, corpus, 7, positives, max_score=4.0, margin=1.0)
    mined = mine_hard_negatives(queries.float().cuda(), corpus.float(), 7,
                                positives=positives.float().cuda(), max_score=4.0, margin=1.0,
                                score="dot", query_chunk=16, corpus_chunk=64)
    assert mined.indices.is_cuda and as_lists(mined) == expected
