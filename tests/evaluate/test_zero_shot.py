"""CLIP's zero-shot classifier (prompt ensembling) and its top-k accuracy, against loop
references written from the definition (float64), ties made on purpose."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit.evaluate import class_embeddings, zero_shot_accuracy, zero_shot_topk

from .test_retrieval import cosine, exact_rows, scores

TEMPLATES = ["a photo of a {}.", "a blurry photo of the {}.", "itap of a {}."]
CLASSES = ["cat", "dog", "ship", "truck"]


class TableEncoder:
    """A text model made of a table: the tokenizer maps each prompt to its row index, and
    ``encode_text`` looks the rows up (and records the batches it was given)."""

    def __init__(self, table: dict[str, torch.Tensor]):
        self.prompts = list(table)
        self.rows = torch.stack([table[p] for p in self.prompts])
        self.batches: list[list[str]] = []

    def tokenizer(self, prompts):
        self.batches.append(list(prompts))
        return torch.tensor([self.prompts.index(p) for p in prompts])

    def encode_text(self, tokens):
        return self.rows[tokens]


def random_table(seed: int, d: int = 6) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    prompts = [t.format(c) for c in CLASSES for t in TEMPLATES]
    return {p: torch.randn(d, generator=generator, dtype=torch.float64) * (1 + 5 * i % 3)
            for i, p in enumerate(prompts)}


def reference_class_embedding(table, name) -> list[float]:
    """CLIP: normalize each prompt's embedding, average over the templates, normalize."""
    units = []
    for template in TEMPLATES:
        row = table[template.format(name)].tolist()
        norm = math.sqrt(sum(x * x for x in row))
        units.append([x / norm for x in row])
    mean = [sum(unit[i] for unit in units) / len(units) for i in range(len(units[0]))]
    norm = math.sqrt(sum(x * x for x in mean))
    return [x / norm for x in mean]


def test_clip_averaging_by_hand():
    table = {"a cat.": torch.tensor([3.0, 4.0, 0.0]), "the cat!": torch.tensor([0.0, 0.0, 2.0]),
             "a dog.": torch.tensor([10.0, 0.0, 0.0]), "the dog!": torch.tensor([0.0, 0.5, 0.0])}
    model = TableEncoder(table)
    result = class_embeddings(model.encode_text, model.tokenizer, ["cat", "dog"],
                              ["a {}.", "the {}!"])
    # cat: (0.6, 0.8, 0) and (0, 0, 1) average to (0.3, 0.4, 0.5), of norm sqrt(0.5); averaging
    # before normalizing would give (1.5, 2, 1) / sqrt(7.25) = (0.557, 0.743, 0.371) instead.
    # dog: (1, 0, 0) and (0, 1, 0) average to (0.5, 0.5, 0), of norm sqrt(0.5).
    s = math.sqrt(0.5)
    expected = torch.tensor([[0.3 / s, 0.4 / s, 0.5 / s], [0.5 / s, 0.5 / s, 0.0]])
    assert result.shape == (2, 3) and result.dtype == torch.float32
    assert torch.allclose(result, expected, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("batch_size", [1, 2, 5, 7, 12, 256])
def test_class_embeddings_match_the_loop_reference_in_any_batching(seed, batch_size):
    table = random_table(seed)
    model = TableEncoder(table)
    result = class_embeddings(model.encode_text, model.tokenizer, CLASSES, TEMPLATES,
                              batch_size=batch_size)
    assert result.dtype == torch.float64 and result.shape == (len(CLASSES), 6)
    for c, name in enumerate(CLASSES):
        assert result[c].tolist() == pytest.approx(reference_class_embedding(table, name),
                                                   abs=1e-14)
    # every prompt encoded once, in order of class, at most batch_size at a time
    assert [p for batch in model.batches for p in batch] == \
        [t.format(c) for c in CLASSES for t in TEMPLATES]
    assert all(1 <= len(batch) <= batch_size for batch in model.batches)
    assert len(model.batches) == math.ceil(len(CLASSES) * len(TEMPLATES) / batch_size)
    # batching changes no bit
    whole = TableEncoder(table)
    assert torch.equal(result, class_embeddings(whole.encode_text, whole.tokenizer, CLASSES,
                                                TEMPLATES, batch_size=1000))


def test_class_embeddings_run_without_gradients_in_float32_at_least():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(len(CLASSES) * len(TEMPLATES), 5)
    model = TableEncoder({p: torch.zeros(5) for p in random_table(0)})
    result = class_embeddings(embedding, model.tokenizer, CLASSES, TEMPLATES, batch_size=5)
    assert not result.requires_grad and result.dtype == torch.float32
    assert torch.allclose(result.norm(dim=1), torch.ones(len(CLASSES)))
    half = class_embeddings(lambda tokens: embedding(tokens).half(), model.tokenizer, CLASSES,
                            TEMPLATES)
    assert half.dtype == torch.float32


def reference_ranks(images, classes, labels) -> list[int]:
    """1 + the other classes at least as cosine-similar as the image's own (ties against)."""
    return [1 + sum(1 for c, s in enumerate(row) if c != y and s >= row[y])
            for row, y in zip(scores(images, classes), labels.tolist(), strict=True)]


def random_problem(seed: int, n: int = 40, n_classes: int = 6, d: int = 8):
    """Images near their class embedding plus noise (accuracy neither 0 nor 100 %)."""
    generator = torch.Generator().manual_seed(seed)
    classes = torch.randn(n_classes, d, generator=generator, dtype=torch.float64)
    labels = torch.randint(0, n_classes, (n,), generator=generator)
    images = classes[labels] + 1.2 * torch.randn(n, d, generator=generator, dtype=torch.float64)
    return images, classes, labels


def tied_problem(seed: int, n: int = 30, n_classes: int = 6):
    """Exactly representable rows in 4 dimensions (many exactly equal scores), two classes
    pointing the same way."""
    generator = torch.Generator().manual_seed(seed)
    classes = exact_rows(generator, n_classes, 4)
    classes[1] = classes[0] * 2
    return exact_rows(generator, n, 4), classes, torch.randint(0, n_classes, (n,),
                                                               generator=generator)


def reference_topk(images, classes, labels, ks):
    ranks = reference_ranks(images, classes, labels)
    return {f"top{k}": 100.0 * sum(r <= k for r in ranks) / len(ranks) for k in ks}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [1, 7, 1024])
def test_topk_matches_the_loop_reference(seed, chunk):
    images, classes, labels = random_problem(seed)
    expected = reference_topk(images, classes, labels, (1, 2, 6))
    assert 0 < expected["top1"] < 100 and expected["top6"] == 100.0
    assert zero_shot_topk(images, classes, labels, ks=(1, 2, 6), chunk=chunk) == expected
    assert zero_shot_accuracy(images, classes, labels, chunk=chunk) == expected["top1"]
    assert zero_shot_accuracy(images, classes, labels, k=2) == expected["top2"]
    # float32 too: well posed far above its rounding
    scores(images, classes, gap=1e-5)
    assert zero_shot_topk(images.float(), classes.float(), labels, ks=(1, 2, 6)) == expected


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ties_count_against_the_model_as_in_the_reference(seed, dtype):
    images, classes, labels = tied_problem(seed)
    expected = reference_topk(images, classes, labels, (1, 2, 3))
    assert zero_shot_topk(images.to(dtype), classes.to(dtype), labels, ks=(1, 2, 3),
                          chunk=4) == expected
    similarity = [[cosine(x, c) for c in classes.tolist()] for x in images.tolist()]
    assert any(sum(s == row[y] for s in row) > 1
               for row, y in zip(similarity, labels.tolist(), strict=True))


def test_a_tie_for_the_top_score_is_a_miss():
    classes = torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])  # classes 0 and 1 coincide
    images = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 5.0], [1.0, 1.0]])
    labels = torch.tensor([0, 1, 2, 2])
    # images 0 and 1 tie between classes 0 and 1: rank 2; image 2: rank 1; image 3 scores
    # 1/sqrt(2) with every class: rank 3 (argmax's first index would have called 0 right)
    assert zero_shot_topk(images, classes, labels, ks=(1, 2, 3)) == {
        "top1": 25.0, "top2": 75.0, "top3": 100.0}


def test_perfect_embeddings_score_100():
    generator = torch.Generator().manual_seed(0)
    classes = torch.randn(10, 16, generator=generator)
    labels = torch.randint(0, 10, (50,), generator=generator)
    images = classes[labels] * (torch.rand(50, 1, generator=generator) * 10 + 0.1)
    assert zero_shot_accuracy(images, classes, labels) == 100.0


def test_the_classifier_classifies_its_own_prompts():
    table = random_table(1)
    model = TableEncoder(table)
    classifier = class_embeddings(model.encode_text, model.tokenizer, CLASSES, TEMPLATES)
    # an image embedded where its class's prompts average to
    images = torch.stack([sum(table[t.format(c)] / table[t.format(c)].norm() for t in TEMPLATES)
                          for c in CLASSES])
    assert zero_shot_accuracy(images, classifier, torch.arange(len(CLASSES))) == 100.0


@pytest.mark.parametrize("make", [random_problem, tied_problem])
@pytest.mark.parametrize("seed", range(3))
def test_accuracy_does_not_depend_on_the_order_of_images_or_classes(make, seed):
    images, classes, labels = make(seed)
    generator = torch.Generator().manual_seed(50 + seed)
    image_order = torch.randperm(images.shape[0], generator=generator)
    class_order = torch.randperm(classes.shape[0], generator=generator)
    new_label = torch.argsort(class_order)  # class class_order[p] is now class p
    ks = (1, 2, 4)
    assert zero_shot_topk(images[image_order], classes[class_order],
                          new_label[labels[image_order]], ks) == \
        zero_shot_topk(images, classes, labels, ks)


@pytest.mark.parametrize("call, message", [
    (lambda i, c, y: zero_shot_topk(i, c, y[:-1]), "labels must have 40 entries"),
    (lambda i, c, y: zero_shot_topk(i, c, y.float()), "labels must be a flat sequence of "
                                                      "integers"),
    (lambda i, c, y: zero_shot_topk(i, c, y - 1), r"labels must be class indices in \[0, 6\), "
                                                  r"got values in \[-1"),
    (lambda i, c, y: zero_shot_topk(i, c[:3], y), r"labels must be class indices in \[0, 3\)"),
    (lambda i, c, y: zero_shot_topk(i[:0], c, y[:0]), "image_embeddings must be a non-empty "
                                                      "matrix"),
    (lambda i, c, y: zero_shot_topk(i, c[:0], y), "class_embeddings must be a non-empty "
                                                  "matrix"),
    (lambda i, c, y: zero_shot_topk(i, c[:, :3], y), "class_embeddings must have 8 columns"),
    (lambda i, c, y: zero_shot_topk(i[:, :, None], c, y), "image_embeddings must be a "
                                                          "non-empty matrix"),
    (lambda i, c, y: zero_shot_topk(i, c, y, ks=(7,)), r"ks must be integers in \[1, 6\]"),
    (lambda i, c, y: zero_shot_accuracy(i, c, y, k=0), r"ks must be integers in \[1, 6\]"),
    (lambda i, c, y: zero_shot_topk(i, c, y, chunk=0), "chunk must be an integer >= 1"),
    (lambda i, c, y: zero_shot_topk(i, c * math.inf, y), "class_embeddings must be finite"),
])
def test_bad_arguments_for_the_accuracy_are_named(call, message):
    images, classes, labels = random_problem(0)
    with pytest.raises(ValueError, match=message):
        call(images, classes, labels)


def embed(encode_text=None, class_names=CLASSES, templates=TEMPLATES, batch_size=256):
    model = TableEncoder(random_table(0))
    return class_embeddings(encode_text or model.encode_text, model.tokenizer, class_names,
                            templates, batch_size)


@pytest.mark.parametrize("template", ["a photo of a cat.", "a {} of a {}.", "a photo of a {0}.",
                                      "a {name}.", "a {{}}.", "a {.", "a }{ {}"])
def test_a_template_needs_one_place_for_the_name(template):
    with pytest.raises(ValueError, match="templates must each hold one '{}' for the class name"):
        embed(templates=[TEMPLATES[0], template])


@pytest.mark.parametrize("kwargs, message", [
    ({"templates": []}, "templates must not be empty"),
    ({"class_names": []}, "class_names must not be empty"),
    ({"class_names": "cat"}, "class_names must be a sequence of strings"),
    ({"templates": "a {}."}, "templates must be a sequence of strings"),
    ({"class_names": ["cat", 3]}, "class_names must be a sequence of strings"),
    ({"batch_size": 0}, "batch_size must be an integer >= 1"),
    ({"encode_text": lambda tokens: torch.zeros(len(tokens) + 1, 4)},
     r"encode_text must return one embedding row per prompt, shape \(12, d\), got \(13, 4\)"),
    ({"encode_text": lambda tokens: torch.zeros(len(tokens))}, "encode_text must return one "
                                                               "embedding row"),
    ({"encode_text": lambda tokens: torch.full((len(tokens), 4), math.nan)},
     "encode_text returned non-finite embeddings for prompts 0 to 11"),
    ({"encode_text": lambda tokens: torch.ones(len(tokens), 3 + len(tokens)), "batch_size": 5},
     "encode_text must return rows of one width, got 5 after 8"),
])
def test_bad_arguments_for_the_classifier_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        embed(**kwargs)
