"""Image-text retrieval recall against a loop reference written from the definition (float64),
with several captions per image, ties made on purpose, and chance levels by enumeration."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from contrastkit.evaluate import chance_recalls, retrieval_ranks, retrieval_recalls


def cosine(a, b) -> float:
    """Cosine similarity of two lists, in Python floats (float64)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def scores(queries: torch.Tensor, candidates: torch.Tensor,
           gap: float = 1e-9) -> list[list[float]]:
    """Every query's cosine similarity to every candidate, checked well posed: two scores of a
    row are equal or more than ``gap`` apart, so that float rounding (of any machine's BLAS, in
    the dtype tested) decides no comparison of the function under test."""
    rows = [[cosine(q, c) for c in candidates.tolist()] for q in queries.tolist()]
    for row in rows:
        for x, y in itertools.combinations(row, 2):
            assert x == y or abs(x - y) > gap
    return rows


def reference_ranks(images, texts, text_image, gap=1e-9) -> tuple[list[int], list[int]]:
    """Ranks with ties against the model: 1 + the wrong candidates scored at least as high as
    the best right one."""
    owner = [int(i) for i in text_image]
    image_ranks = []
    for i, row in enumerate(scores(images, texts, gap)):
        best = max(row[j] for j in range(len(owner)) if owner[j] == i)
        image_ranks.append(1 + sum(1 for j in range(len(owner)) if owner[j] != i
                                   and row[j] >= best))
    text_ranks = []
    for j, row in enumerate(scores(texts, images, gap)):
        text_ranks.append(1 + sum(1 for i in range(len(row)) if i != owner[j]
                                  and row[i] >= row[owner[j]]))
    return image_ranks, text_ranks


def reference_recalls(images, texts, text_image, ks) -> dict[str, float]:
    image_ranks, text_ranks = reference_ranks(images, texts, text_image)
    result = {}
    for k in ks:
        result[f"image_to_text_r{k}"] = 100.0 * sum(r <= k for r in image_ranks) / len(image_ranks)
    for k in ks:
        result[f"text_to_image_r{k}"] = 100.0 * sum(r <= k for r in text_ranks) / len(text_ranks)
    return result


def captions(generator: torch.Generator, n_images: int, most: int = 4) -> torch.Tensor:
    """Each image's index once per caption (1 to ``most`` captions), in shuffled order."""
    counts = torch.randint(1, most + 1, (n_images,), generator=generator)
    owner = torch.repeat_interleave(torch.arange(n_images), counts)
    return owner[torch.randperm(owner.shape[0], generator=generator)]


def random_problem(seed: int, n_images: int = 12, d: int = 8):
    """Gaussian images, captions = their image plus noise (recall neither 0 nor 100 %)."""
    generator = torch.Generator().manual_seed(seed)
    owner = captions(generator, n_images)
    images = torch.randn(n_images, d, generator=generator, dtype=torch.float64)
    texts = images[owner] + 1.5 * torch.randn(owner.shape[0], d, generator=generator,
                                              dtype=torch.float64)
    return images, texts, owner


def exact_rows(generator: torch.Generator, n: int, d: int = 8) -> torch.Tensor:
    """Rows whose cosine similarities are exact in float32 and float64 whatever the order of
    summation, so that equal ones are bit-for-bit equal: 1 or 4 entries of +-1 (norm 1 or 2)
    times a power of two; normalized, their entries are 0, +-1 or +-1/2."""
    rows = torch.zeros(n, d, dtype=torch.float64)
    for row in rows:
        nonzero = 1 if torch.rand(1, generator=generator) < 0.3 else 4
        where = torch.randperm(d, generator=generator)[:nonzero]
        row[where] = torch.randint(0, 2, (nonzero,), generator=generator).double() * 2 - 1
        row *= 2.0 ** int(torch.randint(-3, 4, (1,), generator=generator))
    return rows


def tied_problem(seed: int, n_images: int = 10, d: int = 4):
    """:func:`exact_rows` in few dimensions (many equal scores), some captions copies of other
    images' captions and some images copies of others."""
    generator = torch.Generator().manual_seed(seed)
    owner = captions(generator, n_images)
    images = exact_rows(generator, n_images, d)
    images[1] = images[0] * 4
    texts = exact_rows(generator, owner.shape[0], d)
    texts[torch.randperm(owner.shape[0], generator=generator)[:5]] = texts[0].clone()
    return images, texts, owner


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [1, 5, 1024])
def test_recalls_match_the_loop_reference(seed, chunk):
    images, texts, owner = random_problem(seed)
    expected = reference_recalls(images, texts, owner, (1, 2, 5))
    assert retrieval_recalls(images, texts, owner, ks=(1, 2, 5), chunk=chunk) == expected
    assert 0 < expected["image_to_text_r1"] < 100 and 0 < expected["text_to_image_r1"] < 100
    image_ranks, text_ranks = retrieval_ranks(images, texts, owner, chunk=chunk)
    ref_images, ref_texts = reference_ranks(images, texts, owner)
    assert image_ranks.tolist() == ref_images and text_ranks.tolist() == ref_texts
    # in float32 too: these problems are well posed at 1e-5, far above float32's rounding
    reference_ranks(images, texts, owner, gap=1e-5)
    assert retrieval_recalls(images.float(), texts.float(), owner, ks=(1, 2, 5),
                             chunk=chunk) == expected


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ties_count_against_the_model_as_in_the_reference(seed, dtype):
    images, texts, owner = tied_problem(seed)
    ref_images, ref_texts = reference_ranks(images, texts, owner)
    image_ranks, text_ranks = retrieval_ranks(images.to(dtype), texts.to(dtype), owner,
                                              chunk=3)
    assert image_ranks.tolist() == ref_images and text_ranks.tolist() == ref_texts
    ks = (1, 3, 10)
    assert retrieval_recalls(images.to(dtype), texts.to(dtype), owner, ks) == \
        reference_recalls(images, texts, owner, ks)
    # the problem does have ties that decide ranks: the optimistic rule (strictly higher only)
    # ranks some query better
    similarity = torch.nn.functional.normalize(texts) @ torch.nn.functional.normalize(images).T
    own = similarity.gather(1, owner[:, None])
    assert ((similarity == own).sum(dim=1) > 1).any()


def test_a_hand_made_tie():
    images = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    texts = torch.tensor([[1.0, 0.0], [2.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    owner = torch.tensor([0, 0, 1, 1])
    # image 0: its texts 0 and 1 and image 1's text 2 all score 1: rank 2 (the tie with its own
    # text 1 costs nothing, the one with text 2 does); image 1: its text 3 scores 1/sqrt(2),
    # nothing else above 0: rank 1. Text 2 scores 1 with image 0, 0 with its own: rank 2;
    # text 3 scores 1/sqrt(2) with both images: rank 2.
    image_ranks, text_ranks = retrieval_ranks(images, texts, owner)
    assert image_ranks.tolist() == [2, 1] and text_ranks.tolist() == [1, 1, 2, 2]
    assert retrieval_recalls(images, texts, owner, ks=(1, 2)) == {
        "image_to_text_r1": 50.0, "image_to_text_r2": 100.0,
        "text_to_image_r1": 50.0, "text_to_image_r2": 100.0}


def test_a_collapsed_encoder_retrieves_nothing():
    generator = torch.Generator().manual_seed(0)
    owner = captions(generator, 6)
    # every cosine is exactly 1 (normalized entries 1/2), whatever the order of summation
    images, texts = torch.ones(6, 4), torch.full((owner.shape[0], 4), 2.0)
    image_ranks, text_ranks = retrieval_ranks(images, texts, owner)
    counts = torch.bincount(owner)
    assert image_ranks.tolist() == (1 + owner.shape[0] - counts).tolist()
    assert text_ranks.tolist() == [6] * owner.shape[0]
    result = retrieval_recalls(images, texts, owner, ks=(1, 5, 6))
    assert result["image_to_text_r1"] == result["text_to_image_r5"] == 0.0
    assert result["text_to_image_r6"] == 100.0


@pytest.mark.parametrize("seed", range(3))
def test_perfect_embeddings_score_100_even_with_identical_captions(seed):
    generator = torch.Generator().manual_seed(seed)
    owner = captions(generator, 15)
    images = torch.randn(15, 16, generator=generator)
    scale = torch.rand(owner.shape[0], 1, generator=generator) * 10 + 0.1
    texts = images[owner] * scale  # an image's captions tie with each other at cosine 1
    result = retrieval_recalls(images, texts, owner)
    assert set(result) == {f"{direction}_r{k}" for direction in ("image_to_text",
                                                                  "text_to_image")
                           for k in (1, 5, 10)}
    assert all(value == 100.0 for value in result.values())


@pytest.mark.parametrize("make", [random_problem, tied_problem])
@pytest.mark.parametrize("seed", range(3))
def test_recalls_do_not_depend_on_the_order_of_images_or_texts(make, seed):
    images, texts, owner = make(seed)
    generator = torch.Generator().manual_seed(100 + seed)
    image_order = torch.randperm(images.shape[0], generator=generator)
    text_order = torch.randperm(texts.shape[0], generator=generator)
    new_index = torch.argsort(image_order)  # image image_order[p] is now image p
    image_ranks, text_ranks = retrieval_ranks(images, texts, owner)
    moved_images, moved_texts = retrieval_ranks(images[image_order], texts[text_order],
                                                new_index[owner[text_order]])
    assert torch.equal(moved_images, image_ranks[image_order])
    assert torch.equal(moved_texts, text_ranks[text_order])
    assert retrieval_recalls(images[image_order], texts[text_order],
                             new_index[owner[text_order]]) == \
        retrieval_recalls(images, texts, owner)


def test_chance_levels_equal_an_enumeration_of_every_order():
    owner = [0, 1, 1, 2, 0, 1, 3]  # 4 images with 2, 3, 1 and 1 captions
    n_images, n_texts = 4, len(owner)
    ks = (1, 2, 4)
    expected = {}
    for k in ks:
        hits = 0
        for order in itertools.permutations(range(n_texts)):
            hits += sum(any(owner[j] == i for j in order[:k]) for i in range(n_images))
        expected[f"image_to_text_r{k}"] = 100.0 * hits / (math.factorial(n_texts) * n_images)
    for k in ks:
        hits = sum(order.index(owner[j]) < k for order in itertools.permutations(range(n_images))
                   for j in range(n_texts))
        expected[f"text_to_image_r{k}"] = 100.0 * hits / (math.factorial(n_images) * n_texts)
    result = chance_recalls(torch.tensor(owner), n_images, ks)
    assert result.keys() == expected.keys()
    for key in expected:
        assert result[key] == pytest.approx(expected[key], abs=1e-12)
    # one caption per image: k / N both ways
    single = chance_recalls(torch.randperm(20, generator=torch.Generator().manual_seed(0)), 20)
    assert single == pytest.approx({f"{direction}_r{k}": 100.0 * k / 20
                                    for direction in ("image_to_text", "text_to_image")
                                    for k in (1, 5, 10)}, abs=1e-12)


def test_inputs_need_no_tensor_for_the_captions_and_may_require_grad():
    images, texts, owner = random_problem(0)
    images.requires_grad_(True)
    assert retrieval_recalls(images, texts, owner.tolist()) == \
        retrieval_recalls(images.detach(), texts, owner)


@pytest.mark.parametrize("call, message", [
    (lambda i, t, o: retrieval_recalls(i[0], t, o), r"image_embeddings must be a non-empty "
                                                    r"matrix \(n, d\), got \(8,\)"),
    (lambda i, t, o: retrieval_recalls(i[:0], t, o[:0]), "image_embeddings must be a "
                                                         "non-empty matrix"),
    (lambda i, t, o: retrieval_recalls(i, t[:0], o[:0]), "text_embeddings must be a "
                                                         "non-empty matrix"),
    (lambda i, t, o: retrieval_recalls(i, t[:, :5], o), "text_embeddings must have 8 columns"),
    (lambda i, t, o: retrieval_recalls(i, t, o[:-1]), "text_image must have .* entries"),
    (lambda i, t, o: retrieval_recalls(i, t, o.double()), "text_image must be a flat sequence "
                                                          "of integers"),
    (lambda i, t, o: retrieval_recalls(i, t, o[:, None]), "text_image must be a flat"),
    (lambda i, t, o: retrieval_recalls(i, t, o - 1), r"text_image must hold image indices in "
                                                     r"\[0, 12\), got values in \[-1"),
    (lambda i, t, o: retrieval_recalls(i, t, o + 1), r"text_image must hold image indices"),
    (lambda i, t, o: retrieval_recalls(i, t, torch.where(o == 3, 4, o)),
     r"text_image must give every image a text; images \[3\]"),
    (lambda i, t, o: retrieval_recalls(i, t, o, ks=(1, 13)), r"ks must be integers in "
                                                             r"\[1, 12\] .*got 13"),
    (lambda i, t, o: retrieval_recalls(i, t, o, ks=(0,)), "ks must be integers"),
    (lambda i, t, o: retrieval_recalls(i, t, o, ks=()), "ks must name at least one k"),
    (lambda i, t, o: retrieval_recalls(i, t, o, chunk=0), "chunk must be an integer >= 1"),
    (lambda i, t, o: retrieval_recalls(i * math.nan, t, o), "image_embeddings must be finite"),
    (lambda i, t, o: retrieval_ranks(i, t * math.inf, o), "text_embeddings must be finite"),
    (lambda i, t, o: chance_recalls(o, 11), r"text_image must hold image indices in \[0, 11\)"),
    (lambda i, t, o: chance_recalls(o, 13), r"every image a text; images \[12\]"),
    (lambda i, t, o: chance_recalls(o, 12, ks=(20,)), r"ks must be integers in \[1, 12\]"),
    (lambda i, t, o: chance_recalls(o, 0), "num_images must be an integer >= 1"),
])
def test_bad_arguments_are_named(call, message):
    images, texts, owner = random_problem(0)
    with pytest.raises(ValueError, match=message):
        call(images, texts, owner)


def test_k_equal_to_the_number_of_images_is_allowed_and_trivial():
    images, texts, owner = random_problem(1)
    result = retrieval_recalls(images, texts, owner, ks=(12,))
    assert result == {"image_to_text_r12": 100.0, "text_to_image_r12": 100.0}
