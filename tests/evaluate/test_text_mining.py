"""Hard negatives for text pairs (``contrastkit mine``): the rows written against a brute-force
float64 ranking of the encoder's own embeddings, the exclusion by text, the filters that drop
rows, the output folder that ``dataset=text_files`` retrains on, and bad input in one line."""

import json

import pytest
import torch

from contrastkit.cli import main
from contrastkit.data import TextPairs, load_paraphrases, load_text_file, load_text_split
from contrastkit.evaluate import mine_text_pairs
from contrastkit.evaluate.text_pairs import embed_sentences
from contrastkit.models.sentence import build_sentence_encoder
from contrastkit.train import pretrain
from tests.train.tiny_text import SIZES, tiny_text_config

TEXTS = ["a red fox runs", "a crimson vixen sprints", "the red fox dashes", "a blue cat naps",
         "an azure kitty dozes", "a green duck swims", "a jade mallard paddles",
         "a red fox sleeps", "a blue cat runs", "a green duck naps"]


def rows_of(pairs):
    return [[pairs.texts[i] for i in row] for row in pairs.row_texts().tolist()]


def sample_pairs():
    """The fox anchor twice, with two positives; a row's negative given."""
    rows = [(0, 1, 7), (0, 2, 8), (3, 4, 9), (5, 6, 7)]
    table = torch.tensor(rows)
    return TextPairs("rows", TEXTS, table[:, 0], table[:, 1], table[:, 2:])


def brute_force(encoder, pairs, corpus, k, keep_negatives=False, margin=None):
    """Each row's mined texts from float64 cosines of the encoder's embeddings, by the rules."""
    embedded = embed_sentences(encoder, list(dict.fromkeys(list(pairs.texts) + corpus)), "cpu")
    names = list(dict.fromkeys(list(pairs.texts) + corpus))
    unit = torch.nn.functional.normalize(embedded.double(), dim=1)
    vector = {text: unit[names.index(text)] for text in names}
    rows = rows_of(pairs)
    mined = []
    for row in rows:
        own = {row[0], *(other[1] for other in rows if other[0] == row[0])}
        if keep_negatives:
            own |= set(row[2:])
        positive = float(vector[row[0]] @ vector[row[1]])
        scored = sorted((-float(vector[row[0]] @ vector[text]), j)
                        for j, text in enumerate(corpus) if text not in own)
        if margin is not None:
            scored = [(s, j) for s, j in scored if -s <= positive - margin]
        mined.append(None if len(scored) < k else
                     (row[:2] + (row[2:] if keep_negatives else [])
                      + [corpus[j] for _, j in scored[:k]]))
    return mined


@pytest.fixture(scope="module")
def encoder():
    torch.manual_seed(0)
    return build_sentence_encoder(8, 96, 16, 1)


@pytest.mark.parametrize("keep_negatives", [False, True])
def test_the_rows_get_the_anchor_s_nearest_texts_that_are_not_its_own(encoder, keep_negatives):
    pairs = sample_pairs()
    corpus = TEXTS[::-1]  # the anchors and positives themselves among the candidates
    mined, summary = mine_text_pairs(encoder, pairs, corpus, 3, keep_negatives=keep_negatives,
                                     batch_size=3)
    assert rows_of(mined) == brute_force(encoder, pairs, corpus, 3, keep_negatives)
    assert summary["rows_written"] == 4 and summary["corpus"] == len(TEXTS)
    fox = {"a red fox runs", "a crimson vixen sprints", "the red fox dashes"}
    for row in rows_of(mined):  # never the anchor nor any of its two positives
        assert row[0] != "a red fox runs" or not fox & set(row[2:])


def test_the_default_corpus_is_the_rows_positives_and_negatives(encoder):
    pairs = sample_pairs()
    corpus = sorted({TEXTS[i] for i in [1, 2, 4, 6, 7, 8, 9]}, key=TEXTS.index)
    mined, summary = mine_text_pairs(encoder, pairs, None, 2)
    assert summary["corpus"] == len(corpus)
    assert rows_of(mined) == brute_force(encoder, pairs, corpus, 2)


def test_rows_the_filters_leave_short_are_dropped_and_counted(encoder):
    pairs = sample_pairs()
    expected = brute_force(encoder, pairs, TEXTS, 3, margin=0.02)
    assert None in expected and any(expected)  # the margin leaves some rows short
    mined, summary = mine_text_pairs(encoder, pairs, TEXTS, 3, margin=0.02)
    assert rows_of(mined) == [row for row in expected if row]
    assert summary["rows_dropped"] == expected.count(None)
    with pytest.raises(ValueError, match="no row of rows has 3 negatives left by the filters"):
        mine_text_pairs(encoder, pairs, TEXTS, 3, max_score=-1.0)


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    config = tiny_text_config(tmp_path_factory.mktemp("mine"), epochs=1)
    pretrain(config)
    return config


def test_mine_writes_a_folder_that_text_files_retrains_on(text_run, tmp_path, capsys):
    out = tmp_path / "mined"
    assert main(["mine", str(text_run.run_dir), "--negatives", "2", "--out", str(out),
                 "--device", "cpu", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"mined 2 negatives for {SIZES['train']} of {SIZES['train']} rows" in printed
    assert f"data_dir={out}" in printed
    train, test = load_text_split(out, "train"), load_text_split(out, "test")
    original = load_paraphrases("train", rows=SIZES["train"])
    assert [row[:2] for row in rows_of(train)] == [row[:2] for row in rows_of(original)]
    assert train.negatives.shape == (SIZES["train"], 2)
    assert rows_of(test) == rows_of(load_paraphrases("test", rows=SIZES["test"]))
    record = json.loads((out / "mining.json").read_text())
    assert record["rows_written"] == SIZES["train"] and record["k"] == 2
    assert record["corpus"] == 2 * SIZES["train"]  # the positives and distractors
    retrained = pretrain(tiny_text_config(tmp_path, dataset="text_files", data_dir=str(out),
                                          name="retrained", epochs=1))
    assert (retrained.run_dir / "last.pt").is_file()


def test_anchors_and_corpus_files_replace_the_run_s_rows(text_run, tmp_path, capsys):
    anchors = tmp_path / "anchors.tsv"
    anchors.write_text("q\tp\nthe red fox runs\ta crimson vixen sprints\n"
                       "a blue cat naps\tan azure kitty dozes\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "out"
    assert main(["mine", str(text_run.run_dir), "--anchors", str(anchors), "--corpus",
                 str(corpus), "--negatives", "4", "--out", str(out), "--device", "cpu",
                 "--no-progress"]) == 0
    mined = load_text_file(out / "train.jsonl")
    assert len(mined) == 2 and mined.negatives.shape == (2, 4)
    assert set(mined.texts[i] for i in mined.negatives.flatten().tolist()) <= set(TEXTS)


@pytest.fixture(scope="module")
def views_run(text_run, tmp_path_factory):
    """The text run's checkpoint, relabelled as a run of two views (no training needed)."""
    state = torch.load(text_run.run_dir / "last.pt", weights_only=False)
    state["config"] = {"task": "views", "name": "views"}
    folder = tmp_path_factory.mktemp("views")
    torch.save(state, folder / "last.pt")
    return folder


@pytest.mark.parametrize("args, fragments", [
    (["{tmp}/none"], ("RUN", "does not exist")),
    (["{run}", "--negatives", "0"], ("--negatives must be >= 1",)),
    (["{run}", "--margin", "-1"], ("--margin must be >= 0",)),
    (["{run}", "--relative-margin", "1.5"], ("--relative-margin", "[0, 1)")),
    (["{run}", "--max-score", "nan"], ("--max-score must be finite",)),
    (["{run}", "--out", "{tmp}/afile"], ("--out", "afile", "is a file")),
    (["{run}", "--corpus", "{tmp}/missing.txt", "--out", "{tmp}/o"], ("missing.txt",
                                                                      "not found")),
    (["{views}", "--out", "{tmp}/o"], ("task=views", "task=text_pairs")),
    (["{run}", "--out", "{tmp}/other"], ("train.csv", "choose another folder")),
])
def test_bad_input_is_one_line_and_writes_nothing(text_run, views_run, tmp_path, monkeypatch,
                                                  capsys, args, fragments):
    monkeypatch.delenv("CONTRASTKIT_DEBUG", raising=False)
    (tmp_path / "afile").write_text("a file\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "train.csv").write_text("a,b\nx,y\n")
    before = sorted(tmp_path.rglob("*"))
    argv = ["mine", *(a.format(tmp=tmp_path, run=text_run.run_dir, views=views_run)
                      for a in args), "--device", "cpu", "--no-progress"]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert 1 <= len(err) <= 2 and "Traceback" not in "".join(err)
    for fragment in fragments:
        assert fragment in err[-1]
    assert sorted(tmp_path.rglob("*")) == before
