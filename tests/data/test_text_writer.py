"""write_text_file writes what load_text_file reads back, row for row, in every format, with
texts that need quoting or escaping, labels and plain sentences; bad requests are refused."""

import json

import pytest
import torch

from contrastkit.data import TextPairs, load_paraphrases, load_text_file, write_text_file

TEXTS = ["a cat, sleeping", 'she said "hi"\tthen left', "ünïcode ✓", "line one\nline two",
         "plain", "another"]


def rows_of(pairs: TextPairs) -> list[list[str]]:
    return [[pairs.texts[i] for i in row] for row in pairs.row_texts().tolist()]


def labeled_pairs() -> TextPairs:
    table = torch.tensor([[0, 1, 2, 3], [4, 5, 0, 1]])
    return TextPairs("rows", TEXTS, table[:, 0], table[:, 1], table[:, 2:],
                     torch.tensor([1, 0]), ["b", "a"])


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv"])
def test_pairs_with_labels_read_back_row_for_row(tmp_path, suffix):
    pairs = labeled_pairs()
    path = write_text_file(pairs, tmp_path / "out" / f"train{suffix}")
    back = load_text_file(path)
    assert rows_of(back) == rows_of(pairs)
    assert [back.class_names[i] for i in back.labels.tolist()] == ["a", "b"]
    assert not list(path.parent.glob(".*"))  # no temporary file left


def test_the_columns_are_named_and_a_jsonl_line_is_one_object(tmp_path):
    path = write_text_file(labeled_pairs(), tmp_path / "train.jsonl")
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert list(first) == ["anchor", "positive", "negative_1", "negative_2", "label"]
    assert first["negative_2"] == "line one\nline two" and first["label"] == "a"


def test_the_bundled_corpus_reads_back_as_generated(tmp_path):
    test = load_paraphrases("test", rows=30)
    assert rows_of(load_text_file(write_text_file(test, tmp_path / "test.tsv"))) == \
        rows_of(test)


def test_plain_sentences_go_to_a_txt_file(tmp_path):
    sentences = TextPairs("notes", ["first", "second"], torch.tensor([1, 0]))
    back = load_text_file(write_text_file(sentences, tmp_path / "train.txt"))
    assert rows_of(back) == [["second"], ["first"]] and not back.paired


@pytest.mark.parametrize("pairs, name, message", [
    (labeled_pairs(), "train.parquet", "must end in .csv, .tsv, .jsonl, .txt"),
    (labeled_pairs(), "train.txt", "a .txt file holds plain sentences"),
    (TextPairs("notes", ["a\nb"], torch.tensor([0])), "train.txt", "holds a line break"),
])
def test_what_a_file_cannot_hold_is_refused(tmp_path, pairs, name, message):
    with pytest.raises(ValueError, match=message):
        write_text_file(pairs, tmp_path / name)
    assert not (tmp_path / name).exists()
