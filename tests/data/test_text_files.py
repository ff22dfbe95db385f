"""Text pairs read from the files users have (CSV, TSV, JSON Lines, plain text), written here in
the real formats, and malformed ones refused with the file and line named."""

import json

import pytest
import torch

from contrastkit.data import DatasetUnavailableError, TextPairs, load_text_file, load_text_split
from contrastkit.data.text_pairs import UNLABELED

ROWS = [("how do I reset a password?", "steps to recover your password", "the history of locks"),
        ("a cat, sleeping", "a sleeping cat", "a dog, running"),
        ("how do I reset a password?", "password recovery guide", "a cat, sleeping")]


def _texts(pairs: TextPairs) -> list[list[str]]:
    return [[pairs.texts[i] for i in row] for row in pairs.row_texts().tolist()]


def _write_table(path, header, rows, separator):
    import csv

    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, delimiter=separator)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("suffix, separator", [(".csv", ","), (".tsv", "\t")])
def test_a_table_is_read_by_position_whatever_the_column_names(tmp_path, suffix, separator):
    path = _write_table(tmp_path / f"train{suffix}", ["query", "answer", "hard"], ROWS,
                        separator)
    pairs = load_text_file(path)
    assert _texts(pairs) == [list(row) for row in ROWS]
    assert pairs.paired and pairs.negatives.shape == (3, 1) and not pairs.labeled
    # each distinct text is stored once: the repeated anchor and the negative equal to an
    # anchor share their index
    assert pairs.anchors[0] == pairs.anchors[2] and pairs.negatives[2, 0] == pairs.anchors[1]
    assert len(pairs.texts) == len({text for row in ROWS for text in row})


def test_json_lines_keep_the_first_object_s_key_order_and_take_a_label(tmp_path):
    path = tmp_path / "train.jsonl"
    records = [{"anchor": a, "positive": p, "label": label, "negative": n}
               for (a, p, n), label in zip(ROWS, ["x", 7, "x"], strict=True)]
    records[1] = {"negative": ROWS[1][2], "label": 7, "positive": ROWS[1][1],
                  "anchor": ROWS[1][0]}  # later rows may order their keys otherwise
    path.write_text("\n".join(json.dumps(record) for record in records) + "\n\n")
    pairs = load_text_file(path)
    assert _texts(pairs) == [list(row) for row in ROWS]
    assert pairs.class_names == ("x", "7") and pairs.labels.tolist() == [0, 1, 0]


def test_plain_sentences_from_a_text_file_or_a_single_column(tmp_path):
    (tmp_path / "a.txt").write_text("\ufefffirst sentence\n\n  second one  \nfirst sentence\n",
                                    encoding="utf-8")
    pairs = load_text_file(tmp_path / "a.txt")
    assert not pairs.paired and _texts(pairs) == [["first sentence"], ["second one"],
                                                  ["first sentence"]]
    assert pairs.sentences().texts == ("first sentence", "second one")
    _write_table(tmp_path / "b.csv", ["sentence"], [["one"], ["two"]], ",")
    assert _texts(load_text_file(tmp_path / "b.csv")) == [["one"], ["two"]]


def test_quoted_fields_keep_separators_and_line_breaks(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('anchor,positive\n"a cat, sleeping","line one\nline two"\nb,c\n')
    assert _texts(load_text_file(path)) == [["a cat, sleeping", "line one\nline two"],
                                           ["b", "c"]]


def test_sentences_are_every_distinct_text_of_the_rows(tmp_path):
    path = _write_table(tmp_path / "train.tsv", ["a", "p", "n"], ROWS, "\t")
    pairs = load_text_file(path)
    sentences = pairs.sentences()
    assert sorted(sentences.texts) == sorted({text for row in ROWS for text in row})
    assert sentences.positives is None and sentences.labels.eq(UNLABELED).all()


@pytest.mark.parametrize("name, content, match", [
    ("bad.csv", "anchor,positive\na,b\nc\n", r"bad.csv, line 3: the row has 1 fields, fewer "
                                             r"than the header's 2"),
    ("bad.csv", "anchor,positive\na,b,c\n", "line 2: the row has 3 fields, more"),
    ("bad.tsv", "anchor\tpositive\na\t  \n", r"line 2: empty text in column 'positive'"),
    ("bad.csv", "anchor,positive,label\na,b,\n", "line 2: empty 'label'"),
    ("bad.csv", "anchor,positive\n", "holds no rows"),
    ("bad.csv", "", "is empty: it needs a header row"),
    ("bad.csv", "anchor,anchor\na,b\n", "line 1: the columns .* repeat a name"),
    ("bad.csv", "text,label\na,x\n", "line 1: a 'label' column needs pairs"),
    ("bad.csv", "label\nx\n", "line 1: no text column"),
    ("bad.csv", "anchor,positive\nsame,same\n", "line 2: the positive repeats the anchor"),
    ("bad.csv", "a,p,n\nx,y,z\nx,y,y\n", "line 3: a negative repeats the row's anchor or "
                                         "positive"),
    ("bad.csv", 'anchor,positive\n"open quote,b\n', "line 2: unexpected end of data"),
    ("bad.jsonl", '{"anchor": "a", "positive": "b"}\n{"anchor": "c"\n',
     "bad.jsonl, line 2: not a JSON object"),
    ("bad.jsonl", '["a", "b"]\n', "line 1: each line must hold a JSON object"),
    ("bad.jsonl", '{"anchor": "a", "positive": "b"}\n\n{"anchor": "c", "other": "d"}\n',
     r"line 3: the keys \['anchor', 'other'\] differ from the first row's"),
    ("bad.jsonl", '{"anchor": "a", "positive": 3}\n', "line 1: column 'positive' must hold a "
                                                       "string, got int"),
    ("bad.jsonl", '{"anchor": "a", "positive": "b", "label": 1.5}\n',
     "line 1: the label must be a string or an integer, got float"),
    ("bad.txt", "\n  \n", "holds no rows"),
])
def test_malformed_files_are_errors_naming_the_file_and_line(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=match) as error:
        load_text_file(path)
    assert f"pairs file {path}" in str(error.value)


def test_text_that_is_not_utf8_is_an_error_naming_its_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"anchor\tpositive\na\tb\ncaf\xe9\tc\n")
    with pytest.raises(ValueError, match=r"train.tsv, line 3: not UTF-8 text \(byte 0xe9\)"):
        load_text_file(path)


@pytest.mark.parametrize("name, error, match", [
    ("pairs.parquet", ValueError, "must end in .csv, .tsv, .jsonl, .txt"),
    ("missing.csv", DatasetUnavailableError, "not found"),
])
def test_a_file_of_another_kind_or_missing_is_an_error(tmp_path, name, error, match):
    with pytest.raises(error, match=match):
        load_text_file(tmp_path / name)


def test_a_folder_is_not_a_file(tmp_path):
    (tmp_path / "train.csv").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        load_text_file(tmp_path / "train.csv")


def test_a_split_is_the_one_file_of_its_name_in_the_folder(tmp_path):
    with pytest.raises(DatasetUnavailableError, match="looked for train.csv, train.tsv, "
                                                       "train.jsonl and train.txt"):
        load_text_split(tmp_path, "train")
    (tmp_path / "train.txt").write_text("one\ntwo\n")
    assert _texts(load_text_split(tmp_path, "train")) == [["one"], ["two"]]
    (tmp_path / "train.jsonl").write_text('{"a": "x"}\n')
    with pytest.raises(ValueError, match="all exist; keep one"):
        load_text_split(tmp_path, "train")
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        load_text_split(tmp_path, "validation")


@pytest.mark.parametrize("kwargs, match", [
    ({"texts": ["a", "a"]}, "texts must be distinct"),
    ({"texts": ["a", ""]}, "non-empty strings"),
    ({"anchors": torch.tensor([0, 2])}, r"anchors must index texts, in \[0, 2\)"),
    ({"anchors": torch.tensor([0.0, 1.0])}, "anchors must be an int64 tensor"),
    ({"positives": torch.tensor([1])}, r"positives must have one entry per row \(2\)"),
    ({"negatives": torch.tensor([[1], [0]])}, "negatives need positives"),
    ({"positives": torch.tensor([1, 0]), "labels": torch.tensor([0, -1]),
      "class_names": ["x"]}, "every row a class, or none"),
    ({"positives": torch.tensor([1, 0]), "labels": torch.tensor([0, 1]),
      "class_names": ["x"]}, r"labels must be -1 or a class in \[0, len\(class_names\)\)"),
])
def test_text_pairs_check_what_they_are_given(kwargs, match):
    arguments = {"name": "rows", "texts": ["a", "b"], "anchors": torch.tensor([0, 1]),
                 **kwargs}
    with pytest.raises(ValueError, match=match):
        TextPairs(**arguments)
