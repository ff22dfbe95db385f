"""A paraphrase corpus generated from a seed, for sentence-embedding training without any
download (``dataset=paraphrases``).

A *fact* is one value of each of six attributes: a size, a colour, an animal, what it does,
where and when (3 x 8 x 10 x 8 x 8 x 4 = 61 440 facts). A sentence states a fact through one of
six templates, which order the attributes differently, with one of three synonyms for each
value ("a crimson hound, little, naps in the woods at dusk", "in the forest at sunset a small dog,
scarlet, sleeps" ...). Two sentences of one fact are paraphrases; a
*distractor* of a fact is the fact with exactly one attribute changed, written with the same
template and words as the paraphrase it competes with, so that it differs from it in one phrase:
the hard negative.

- ``train``: rows ``(anchor, positive, negative)``: two sentences of a fact, in two different
  templates with synonyms drawn independently, and a distractor of it;
- ``test``: the same rows for held-out facts (none is a training anchor's fact); the retrieval
  corpus is the test rows' positives and negatives, every one a different fact (no distractor
  is a test fact), so each query (an anchor) has exactly one relevant document, its positive,
  and a hard negative beside it.

Everything is drawn from ``random.Random`` seeded by the split and ``seed``: the same corpus on
every machine. The test split does not depend on the number of training rows.
"""

from __future__ import annotations

import random

import torch

from .text_pairs import TextPairs, indexed

#: Each attribute's values, each value its synonyms (the first names the value).
ATTRIBUTES: dict[str, tuple[tuple[str, ...], ...]] = {
    "size": (("small", "little", "tiny"), ("large", "big", "huge"),
             ("medium", "mid-sized", "medium-sized")),
    "colour": (("red", "crimson", "scarlet"), ("blue", "azure", "cobalt"),
               ("green", "emerald", "jade"), ("yellow", "golden", "amber"),
               ("black", "ebony", "jet-black"), ("white", "snowy", "ivory"),
               ("brown", "chestnut", "tawny"), ("grey", "gray", "silver")),
    "animal": (("dog", "hound", "canine"), ("cat", "feline", "kitty"),
               ("horse", "steed", "mare"), ("bird", "songbird", "fowl"),
               ("rabbit", "bunny", "hare"), ("fox", "vixen", "reynard"),
               ("bear", "grizzly", "bruin"), ("goat", "billy goat", "nanny goat"),
               ("mouse", "rodent", "field mouse"), ("duck", "mallard", "drake")),
    "action": (("runs", "sprints", "dashes"), ("sleeps", "naps", "dozes"),
               ("eats", "feeds", "munches"), ("jumps", "leaps", "hops"),
               ("swims", "paddles", "bathes"), ("sits", "rests", "lies still"),
               ("plays", "frolics", "romps"), ("hides", "lurks", "takes cover")),
    "place": (("in the garden", "in the yard", "in the flowerbed"),
              ("near the river", "by the stream", "at the riverbank"),
              ("in the forest", "in the woods", "among the trees"),
              ("on the hill", "on the slope", "atop the hill"),
              ("in the house", "indoors", "inside the home"),
              ("on the beach", "by the sea", "on the shore"),
              ("in the field", "in the meadow", "on the grass"),
              ("in the barn", "in the stable", "in the shed")),
    "time": (("in the morning", "at dawn", "early in the day"),
             ("at noon", "at midday", "around lunchtime"),
             ("in the evening", "at dusk", "at sunset"),
             ("at night", "after dark", "at midnight")),
}
NAMES = tuple(ATTRIBUTES)
SIZES = tuple(len(values) for values in ATTRIBUTES.values())
#: The templates: the same six slots in six orders.
TEMPLATES = (
    "the {size} {colour} {animal} {action} {place} {time}",
    "{time}, the {size} {colour} {animal} {action} {place}",
    "{place} {time} a {size} {animal}, {colour}, {action}",
    "a {colour} {animal}, {size}, {action} {place} {time}",
    "{time} {place} a {size} {colour} {animal} {action}",
    "{place}, the {animal} that {action} {time} is {size}, {colour}",
)
FACTS = 1
for _size in SIZES:
    FACTS *= _size
TRAIN_ROWS = 20_000
#: The training rows of ``paraphrases_small`` (the same test split): a corpus whose epoch is
#: short enough for the runs of a CPU recipe tier to train many epochs.
SMALL_TRAIN_ROWS = 512
TEST_QUERIES = 500

Fact = tuple[int, ...]
Wording = tuple[int, tuple[int, ...]]  # a template and a synonym of each attribute


def load_paraphrases(split: str, seed: int = 0, *, rows: int | None = None) -> TextPairs:
    """Split ``split`` (``"train"`` or ``"test"``) of the corpus of ``seed`` (module
    docstring): ``rows`` rows (default :data:`TRAIN_ROWS` for ``train``, :data:`TEST_QUERIES`
    for ``test``) of an anchor, its positive and one negative, the distractor."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test' for paraphrases, got {split!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    default, most = ((TRAIN_ROWS, FACTS - TEST_QUERIES) if split == "train" else
                     (TEST_QUERIES, TEST_QUERIES))
    rows = default if rows is None else rows
    if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= most:
        raise ValueError(f"rows must be an integer in [1, {most}] for the {split} split, "
                         f"got {rows!r}")
    test_rng = random.Random(f"paraphrases-{seed}-test")
    test_facts = _facts(test_rng.sample(range(FACTS), TEST_QUERIES))
    if split == "test":
        return _rows("paraphrases test", test_rng, test_facts[:rows], taken=set(test_facts))
    held_out = {_number(fact) for fact in test_facts}
    rng = random.Random(f"paraphrases-{seed}-train")
    chosen = rng.sample([n for n in range(FACTS) if n not in held_out], rows)
    return _rows("paraphrases train", rng, _facts(chosen), taken=None)


def sentence(fact: Fact, wording: Wording) -> str:
    """The sentence of ``fact`` (a value index per attribute) in ``wording`` (a template index
    and a synonym index per attribute)."""
    template, synonyms = wording
    words = {name: ATTRIBUTES[name][value][synonym]
             for name, value, synonym in zip(NAMES, fact, synonyms, strict=True)}
    return TEMPLATES[template].format(**words)


def _rows(name: str, rng: random.Random, facts: list[Fact], taken: set[Fact] | None
          ) -> TextPairs:
    """The rows ``(anchor, positive, distractor)`` of ``facts``. With ``taken`` (the test
    split's facts), no distractor is one of them or repeats another: each is added to it."""
    anchors, positives, negatives = [], [], []
    for fact in facts:
        anchor, positive = _wording(rng), _wording(rng)
        while positive[0] == anchor[0]:
            positive = (rng.randrange(len(TEMPLATES)), positive[1])
        distractor = _distractor(rng, fact, set() if taken is None else taken)
        if taken is not None:
            taken.add(distractor)
        changed = next(i for i, (a, b) in enumerate(zip(fact, distractor, strict=True))
                       if a != b)
        # the distractor's words are the positive's, but for the attribute it changes
        synonyms = list(positive[1])
        synonyms[changed] = rng.randrange(3)
        anchors.append(sentence(fact, anchor))
        positives.append(sentence(fact, positive))
        negatives.append(sentence(distractor, (positive[0], tuple(synonyms))))
    texts, ids = indexed(anchors + positives + negatives)
    count = len(facts)
    table = torch.tensor(ids, dtype=torch.long)
    return TextPairs(name, texts, table[:count], table[count:2 * count],
                     table[2 * count:, None])


def _wording(rng: random.Random) -> Wording:
    return rng.randrange(len(TEMPLATES)), tuple(rng.randrange(3) for _ in NAMES)


def _distractor(rng: random.Random, fact: Fact, taken: set[Fact]) -> Fact:
    """``fact`` with one attribute changed at random, not in ``taken``."""
    while True:
        attribute = rng.randrange(len(NAMES))
        changed = list(fact)
        changed[attribute] = rng.choice([v for v in range(SIZES[attribute])
                                         if v != fact[attribute]])
        if tuple(changed) not in taken:
            return tuple(changed)


def _facts(numbers: list[int]) -> list[Fact]:
    """Fact numbers in ``[0, FACTS)`` as value indices (mixed radix)."""
    facts = []
    for number in numbers:
        values = []
        for size in reversed(SIZES):
            number, value = divmod(number, size)
            values.append(value)
        facts.append(tuple(reversed(values)))
    return facts


def _number(fact: Fact) -> int:
    number = 0
    for value, size in zip(fact, SIZES, strict=True):
        number = number * size + value
    return number
