"""retrieval_metrics against a brute-force float64 reference written from the definitions (every
score computed in Python floats, the corpus sorted, ties put in the stated worst-case order),
with several and graded positives, ties made on purpose, every input form and chunk size; and
against torchmetrics, where installed, on problems without ties."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from contrastkit.evaluate import Relevance, retrieval_metrics, retrieval_recalls
from contrastkit.evaluate.image_text import ranking_measurements
from tests.evaluate.test_retrieval import exact_rows, random_problem, scores, tied_problem


def dot_scores(queries, corpus, gap=1e-9) -> list[list[float]]:
    """Dot products in Python floats, checked well posed as :func:`scores`."""
    rows = [[sum(x * y for x, y in zip(q, c, strict=True)) for c in corpus.tolist()]
            for q in queries.tolist()]
    for row in rows:
        ordered = sorted(row)
        assert all(y == x or y - x > gap for x, y in itertools.pairwise(ordered))
    return rows


def reference_metrics(queries, corpus, relevant, grades=None, ks=(1, 2, 5),
                      score="cosine", worst=True) -> dict[str, float]:
    """The metrics of the definitions, query by query: the corpus sorted by score descending,
    then by relevance ascending (a non-relevant item has grade 0; descending, the best case,
    with ``worst=False``), the metrics read off the sorted grades."""
    tie = 1.0 if worst else -1.0
    table = (scores if score == "cosine" else dot_scores)(queries, corpus)
    totals: dict[str, float] = {}

    def add(name, value):
        totals[name] = totals.get(name, 0.0) + value

    for q, row in enumerate(table):
        grade = dict.fromkeys(relevant[q], 1.0) if grades is None else \
            dict(zip(relevant[q], grades[q], strict=True))
        order = sorted(range(len(row)), key=lambda i: (-row[i], tie * grade.get(i, 0.0)))
        gains = [grade.get(i, 0.0) for i in order]
        hits = [g > 0 for g in gains]
        r = len(grade)
        first = hits.index(True) + 1
        ideal = sorted(grade.values(), reverse=True)
        for k in ks:
            add(f"recall@{k}", sum(hits[:k]) / r)
        for k in ks:
            add(f"hit@{k}", float(first <= k))
        for k in ks:
            add(f"mrr@{k}", 1.0 / first if first <= k else 0.0)
        for k in ks:
            dcg = sum(g / math.log2(p + 2) for p, g in enumerate(gains[:k]))
            add(f"ndcg@{k}", dcg / sum(g / math.log2(p + 2) for p, g in enumerate(ideal[:k])))
        add("map@r", sum(sum(hits[:p + 1]) / (p + 1) for p in range(r) if hits[p]) / r)
    return {name: total / len(table) for name, total in totals.items()}


def several_positives(seed: int, n_queries: int = 9, n_corpus: int = 16, d: int = 6,
                      most: int = 4, graded: bool = True):
    """Gaussian corpus; each query relevant to 1 to ``most`` corpus rows (graded 1 to 3) and
    their mean plus noise, so that no metric is 0 or 1."""
    generator = torch.Generator().manual_seed(seed)
    corpus = torch.randn(n_corpus, d, generator=generator, dtype=torch.float64)
    relevant, grades = [], []
    for _ in range(n_queries):
        size = int(torch.randint(1, most + 1, (1,), generator=generator))
        relevant.append(torch.randperm(n_corpus, generator=generator)[:size].tolist())
        grades.append(torch.randint(1, 4, (size,), generator=generator).double().tolist())
    queries = torch.stack([corpus[rows].mean(dim=0) for rows in relevant])
    queries = queries + 1.2 * torch.randn(queries.shape, generator=generator,
                                          dtype=torch.float64)
    return queries, corpus, relevant, grades if graded else None


def tied_positives(seed: int, n_queries: int = 10, n_corpus: int = 14):
    """:func:`exact_rows` in 4 dimensions (many scores exactly equal in every dtype), some
    corpus rows copies of others, several graded positives per query."""
    generator = torch.Generator().manual_seed(seed)
    corpus = exact_rows(generator, n_corpus, 4)
    corpus[torch.randperm(n_corpus, generator=generator)[:4]] = corpus[0].clone()
    queries = exact_rows(generator, n_queries, 4)
    relevant = [torch.randperm(n_corpus, generator=generator)[:1 + q % 3].tolist()
                for q in range(n_queries)]
    grades = [torch.randint(1, 3, (len(rows),), generator=generator).double().tolist()
              for rows in relevant]
    return queries, corpus, relevant, grades


def assert_close(result: dict, expected: dict) -> None:
    assert list(result) == list(expected)
    for name in expected:
        assert result[name] == pytest.approx(expected[name], rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("score", ["cosine", "dot"])
def test_several_positives_match_the_reference(seed, graded, score):
    queries, corpus, relevant, grades = several_positives(seed, graded=graded)
    expected = reference_metrics(queries, corpus, relevant, grades, score=score)
    for chunk in (1, 4, 1024):
        assert_close(retrieval_metrics(queries, corpus, relevant, grades=grades, ks=(1, 2, 5),
                                       score=score, chunk=chunk), expected)
    assert 0 < expected["map@r"] < 1 and 0 < expected["ndcg@2"] < 1
    # well posed at 1e-5 too, far above float32's rounding: float32 gives the same ranking
    (scores if score == "cosine" else dot_scores)(queries, corpus, gap=1e-5)
    assert_close(retrieval_metrics(queries.float(), corpus.float(), relevant, grades=grades,
                                   ks=(1, 2, 5), score=score), expected)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ties_count_against_the_model_as_in_the_reference(seed, dtype):
    queries, corpus, relevant, grades = tied_positives(seed)
    ks = (1, 2, 3, 7)
    for given in (None, grades):
        expected = reference_metrics(queries, corpus, relevant, given, ks)
        whole = retrieval_metrics(queries.to(dtype), corpus.to(dtype), relevant, grades=given,
                                  ks=ks, chunk=1024)
        assert_close(whole, expected)
        # chunk by chunk: the same numbers, bit for bit
        assert retrieval_metrics(queries.to(dtype), corpus.to(dtype), relevant, grades=given,
                                 ks=ks, chunk=1) == whole
    # the ties decide something: the best-case order (relevant first among equals) differs
    assert reference_metrics(queries, corpus, relevant, grades, ks, worst=False) != expected


def test_a_tie_across_the_top_k_boundary_is_counted_in_full():
    # scores 0.9, then four at 0.5 (one relevant), then 0.1: torch.topk(2) keeps one of the
    # 0.5s; the relevant one is behind the other three in the worst-case order: position 5
    queries = torch.tensor([[1.0, 0.0]])
    corpus = torch.tensor([[0.9, 0.0], [0.5, 0.0], [0.5, 1.0], [0.5, 2.0], [0.5, 3.0],
                           [0.1, 0.0]])
    result = retrieval_metrics(queries, corpus, [3], ks=(2, 4, 5), score="dot")
    assert result["hit@4"] == 0.0 and result["hit@5"] == 1.0
    assert result["mrr@5"] == pytest.approx(1 / 5) and result["map@r"] == 0.0
    assert result["ndcg@5"] == pytest.approx(1 / math.log2(6))


def test_a_collapsed_encoder_ranks_every_relevant_item_last():
    queries, corpus = torch.ones(3, 4), torch.full((8, 4), 2.0)  # every cosine exactly 1
    relevant = [[0], [1, 2], [3, 4, 5]]
    result = retrieval_metrics(queries, corpus, relevant, ks=(6, 8))
    # query q's relevant items fill the last len(relevant[q]) of 8 positions
    assert result["hit@6"] == pytest.approx((0 + 0 + 1) / 3)
    assert result["mrr@8"] == pytest.approx((1 / 8 + 1 / 7 + 1 / 6) / 3)
    assert result["recall@8"] == 1.0 and result["map@r"] == 0.0


@pytest.mark.parametrize("make", [random_problem, tied_problem])
@pytest.mark.parametrize("seed", range(3))
def test_hit_at_k_is_the_image_text_recall(make, seed):
    images, texts, owner = make(seed)
    ks = (1, 2, 5)
    recalls = retrieval_recalls(images, texts, owner, ks)
    captions = [torch.nonzero(owner == i).flatten().tolist() for i in range(images.shape[0])]
    image_to_text = retrieval_metrics(images, texts, captions, ks=ks, chunk=3)
    text_to_image = retrieval_metrics(texts, images, owner, ks=ks, chunk=3)
    for k in ks:
        assert 100 * image_to_text[f"hit@{k}"] == pytest.approx(recalls[f"image_to_text_r{k}"])
        assert 100 * text_to_image[f"hit@{k}"] == pytest.approx(recalls[f"text_to_image_r{k}"])
        assert text_to_image[f"recall@{k}"] == text_to_image[f"hit@{k}"]  # one positive


@pytest.mark.parametrize("seed", range(3))
def test_the_order_of_the_corpus_does_not_matter(seed):
    queries, corpus, relevant, grades = tied_positives(seed)
    order = torch.randperm(corpus.shape[0], generator=torch.Generator().manual_seed(seed))
    new_index = torch.argsort(order).tolist()  # row order[p] is now row p
    moved = [[new_index[i] for i in rows] for rows in relevant]
    assert retrieval_metrics(queries, corpus[order], moved, grades=grades, ks=(1, 3)) == \
        pytest.approx(retrieval_metrics(queries, corpus, relevant, grades=grades, ks=(1, 3)),
                      rel=1e-12)


def test_every_form_of_relevance_gives_the_same_metrics():
    queries, corpus, _, _ = several_positives(0)
    pairs = torch.stack([torch.arange(9), torch.arange(9) + 5], dim=1)
    grades = torch.tensor([[1.0, 2.0]]).repeat(9, 1)
    expected = retrieval_metrics(queries, corpus, pairs, grades=grades)
    assert retrieval_metrics(queries, corpus, pairs.tolist(), grades=grades.tolist()) == expected
    csr = Relevance(torch.arange(0, 19, 2), pairs.flatten())
    assert retrieval_metrics(queries, corpus, csr, grades=grades.flatten()) == expected
    single = torch.arange(9)
    assert retrieval_metrics(queries, corpus, single) == \
        retrieval_metrics(queries, corpus, single[:, None]) == \
        retrieval_metrics(queries, corpus, [[i] for i in range(9)])


@pytest.mark.slow  # importing torchmetrics alone takes several CPU seconds
@pytest.mark.parametrize("seed", range(3))
def test_torchmetrics_agrees_where_nothing_ties(seed):
    retrieval = pytest.importorskip("torchmetrics.functional.retrieval")
    queries, corpus, relevant, grades = several_positives(seed)
    scores(queries, corpus, gap=1e-6)  # no ties, so torchmetrics' tie rule does not enter
    ks = (1, 3, 10)
    result = retrieval_metrics(queries, corpus, relevant, grades=grades, ks=ks)
    # shifted above 0, where only the order matters: torchmetrics' recall leaves out relevant
    # items scored <= 0 (its retrieval_recall filters on preds > 0)
    table = 2 + torch.nn.functional.normalize(queries) @ torch.nn.functional.normalize(corpus).T
    ours = {"recall": retrieval.retrieval_recall, "hit": retrieval.retrieval_hit_rate,
            "mrr": retrieval.retrieval_reciprocal_rank,
            "ndcg": retrieval.retrieval_normalized_dcg}
    for k in ks:
        for name, function in ours.items():
            values = []
            for q, rows in enumerate(relevant):
                target = torch.zeros(corpus.shape[0], dtype=torch.long)
                target[rows] = torch.tensor(grades[q]).long() if name == "ndcg" else 1
                values.append(float(function(table[q], target, top_k=k)))
            assert result[f"{name}@{k}"] == pytest.approx(sum(values) / len(values),
                                                          rel=1e-6), (name, k)


def _bad(queries, corpus, relevant, **options):
    return lambda: retrieval_metrics(queries, corpus, relevant, **{"ks": (1,), **options})


Q, C = torch.randn(4, 3), torch.randn(6, 3)


@pytest.mark.parametrize("call, message", [
    (_bad(Q[0], C, [0, 1, 2, 3]), r"queries must be a non-empty matrix \(n, d\), got \(3,\)"),
    (_bad(Q, C[:, :2], [0, 1, 2, 3]), "corpus must have 3 columns"),
    (_bad(Q * math.nan, C, [0, 1, 2, 3]), "queries must be finite"),
    (_bad(Q, C, [0, 1, 2, 3], ks=(0,)), r"ks must be integers in \[1, 6\]"),
    (_bad(Q, C, [0, 1, 2, 3], ks=(7,)), r"ks must be integers in \[1, 6\] \(the number of "
                                        r"corpus items\), got 7"),
    (_bad(Q, C, [0, 1, 2, 3], chunk=0), "chunk must be >= 1, got 0"),
    (_bad(Q, C, [0, 1, 2, 3], score="l2"), r"score must be one of \('cosine', 'dot'\)"),
    (_bad(Q, C, [0, 1, 2]), r"relevant must have one entry per query \(4\), got 3"),
    (_bad(Q, C, [[0], [1], [], [3]]), r"every query at least one relevant corpus item; "
                                      r"queries \[2\]"),
    (_bad(Q, C, torch.zeros(4, 0, dtype=torch.long)), r"queries \[0, 1, 2, 3\]"),
    (_bad(Q, C, [0, 1, 2, 6]), r"relevant must hold corpus indices in \[0, 6\), got values "
                               r"in \[0, 6\]"),
    (_bad(Q, C, [0.0, 1.0, 2.0, 3.0]), "relevant must hold integers, got dtype torch.float"),
    (_bad(Q, C, [[0, 1, 0], [1], [2], [3]]), "must not repeat an index within a query; query 0 "
                                             "names index 0"),
    (_bad(Q, C, [0, 1, 2, 3], grades=[1, 1, 0, 1]), "grades must be finite and > 0"),
    (_bad(Q, C, [0, 1, 2, 3], grades=[1, 1, math.nan, 1]), "grades must be finite and > 0"),
    (_bad(Q, C, [[0, 1], [1], [2], [3]], grades=[[1], [1], [1], [1]]),
     "grades must give one grade per relevant index; query 0 has 2 indices and 1 grades"),
    (_bad(Q, C, Relevance(torch.tensor([0, 1, 2, 3]), torch.arange(4))),
     r"relevant.offsets must have one entry per query plus one \(5\)"),
    (_bad(Q, C, Relevance(torch.tensor([0, 2, 1, 3, 4]), torch.arange(4))),
     "relevant.offsets must rise from 0"),
    (_bad(Q, C, Relevance(torch.arange(5), torch.arange(4)), grades=[1.0]),
     r"grades must have one entry per relevant index \(4\), got 1"),
    (_bad(Q * 1e30, C * 1e30, [0, 1, 2, 3], score="dot"), "overflow"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("make", [random_problem, tied_problem])
def test_an_image_text_run_reports_mrr_and_ndcg_at_10_both_ways(make):
    images, texts, owner = make(0, n_images=12)
    captions = [torch.nonzero(owner == i).flatten().tolist() for i in range(12)]
    result = ranking_measurements(images, texts, owner)
    for direction, expected in (
            ("image_to_text", reference_metrics(images, texts, captions, ks=(10,))),
            ("text_to_image", reference_metrics(texts, images, owner[:, None].tolist(),
                                                ks=(10,)))):
        assert result[f"{direction}_mrr10"] == pytest.approx(expected["mrr@10"], rel=1e-12)
        assert result[f"{direction}_ndcg10"] == pytest.approx(expected["ndcg@10"], rel=1e-12)
    assert len(result) == 4
    small = owner < 9  # 9 images: no k = 10
    assert ranking_measurements(images[:9], texts[small], owner[small]) == {}
