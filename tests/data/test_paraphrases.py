"""The generated paraphrase corpus: every sentence read back to its fact (an independent parser
built from the attribute and template tables), so that what the docstring promises is checked:
anchors and positives are paraphrases in two templates, each negative differs from its
positive's fact in exactly one attribute and from its words in that phrase alone, the test
facts are held out, and the same seed gives the same corpus on every call."""

import re
from functools import cache

import pytest

from contrastkit.data import load_paraphrases
from contrastkit.data.paraphrases import ATTRIBUTES, NAMES, TEMPLATES, TEST_QUERIES
from contrastkit.models import ByteTokenizer
from contrastkit.train import PretrainConfig

ROWS = 400


@cache
def _patterns() -> list[re.Pattern]:
    """One regular expression per template, a named group per attribute."""
    patterns = []
    for template in TEMPLATES:
        pattern = re.escape(template)
        for name in NAMES:
            words = "|".join(re.escape(word) for value in ATTRIBUTES[name] for word in value)
            pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>{words})")
        patterns.append(re.compile(pattern))
    return patterns


def parse(sentence: str) -> tuple[int, tuple[int, ...], tuple[str, ...]]:
    """The template, the fact (a value per attribute) and the words of ``sentence``; exactly one
    reading must exist."""
    readings = []
    for template, pattern in enumerate(_patterns()):
        match = pattern.fullmatch(sentence)
        if match:
            words = tuple(match[name] for name in NAMES)
            fact = tuple(next(index for index, value in enumerate(ATTRIBUTES[name])
                              if word in value) for name, word in zip(NAMES, words, strict=True))
            readings.append((template, fact, words))
    assert len(readings) == 1, (sentence, readings)
    return readings[0]


@pytest.fixture(scope="module")
def train():
    return load_paraphrases("train", rows=ROWS)


@pytest.fixture(scope="module")
def test():
    return load_paraphrases("test")


def _rows(pairs):
    return [[pairs.texts[i] for i in row] for row in pairs.row_texts().tolist()]


def test_no_word_names_two_values():
    words = [word for values in ATTRIBUTES.values() for value in values for word in value]
    assert len(set(words)) == len(words)


@pytest.mark.parametrize("split", ["train", "test"])
def test_rows_are_paraphrases_and_a_one_attribute_distractor(split, train, test):
    pairs = train if split == "train" else test
    assert pairs.negatives.shape[1] == 1 and len(pairs) == (ROWS if split == "train"
                                                            else TEST_QUERIES)
    for anchor, positive, negative in _rows(pairs):
        a_template, a_fact, _ = parse(anchor)
        p_template, p_fact, p_words = parse(positive)
        n_template, n_fact, n_words = parse(negative)
        assert a_fact == p_fact and a_template != p_template
        changed = [i for i in range(len(NAMES)) if n_fact[i] != p_fact[i]]
        assert len(changed) == 1
        assert n_template == p_template
        assert [i for i in range(len(NAMES)) if n_words[i] != p_words[i]] == changed


def test_synonyms_and_templates_all_occur(train):
    seen_words, seen_templates = set(), set()
    for row in _rows(train):
        for text in row:
            template, _, words = parse(text)
            seen_templates.add(template)
            seen_words.update(words)
    assert seen_templates == set(range(len(TEMPLATES)))
    everything = {word for values in ATTRIBUTES.values() for value in values for word in value}
    assert seen_words == everything


def test_test_facts_are_held_out_and_each_query_has_one_relevant_document(test):
    train = load_paraphrases("train", rows=3000)
    rows = _rows(test)
    queries = {parse(anchor)[1] for anchor, _, _ in rows}
    assert len(queries) == len(rows)
    assert not queries & {parse(anchor)[1] for anchor, _, _ in _rows(train)}
    distractors = [parse(negative)[1] for _, _, negative in rows]
    assert len(set(distractors)) == len(distractors)  # every corpus document another fact
    assert not queries & set(distractors)


def test_the_corpus_is_the_same_for_a_seed_and_another_for_another_seed(test):
    assert _rows(load_paraphrases("test")) == _rows(test)
    assert _rows(load_paraphrases("train", rows=50)) == _rows(load_paraphrases("train",
                                                                               rows=50))
    assert _rows(load_paraphrases("test", seed=1)) != _rows(test)
    # the test split does not depend on how many rows are asked of either split
    assert _rows(load_paraphrases("test", rows=20)) == _rows(test)[:20]


def test_every_sentence_fits_the_default_context_without_truncation(train, test):
    room = ByteTokenizer(PretrainConfig.context_length).context_length - 2
    longest = max(len(text.encode()) for pairs in (train, test) for text in pairs.texts)
    assert longest <= room


@pytest.mark.parametrize("kwargs, match", [
    ({"split": "val"}, "split must be 'train' or 'test'"),
    ({"split": "train", "rows": 0}, r"rows must be an integer in \[1, 60940\]"),
    ({"split": "test", "rows": TEST_QUERIES + 1}, r"rows must be an integer in \[1, 500\]"),
    ({"split": "train", "seed": "0"}, "seed must be an integer"),
])
def test_bad_arguments_are_errors_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_paraphrases(**kwargs)
