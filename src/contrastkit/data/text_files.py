"""Text pairs read from the files users have: CSV, TSV, JSON Lines, or plain text.

The columns are read as sentence-transformers reads a dataset's: **by position**, whatever
their names. The first is the anchor, the second its positive, every further one a negative of
that row (``anchor, positive, negative`` or ``query, answer, hard_1, hard_2`` ...); a file with
a single text column holds plain sentences (for SimCSE). A column named ``label`` is not a text
but the row's class (any value; rows of one class are never each other's negatives), and is
taken out before the positions are counted.

- ``.csv`` (comma) and ``.tsv`` (tab): a header row naming the columns, then one row per line
  (fields may be quoted: ``"a cat, sleeping"``);
- ``.jsonl``: one JSON object per line, every object with the same keys, the columns in the
  order of the first object's keys; text values are strings, a label a string or an integer;
  blank lines are skipped;
- ``.txt``: one plain sentence per line, blank lines skipped.

Files are read as UTF-8 (a byte-order mark is skipped); texts are stripped of surrounding white
space and must not be empty. Every error names the file and, for a row, its line, as ``pairs
file PATH, line N: ...``. Each distinct text is stored once (:class:`~.text_pairs.TextPairs`).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import torch

from contrastkit.files import read_utf8

from .text_pairs import TextPairs, indexed
from .vision import DatasetUnavailableError

SUFFIXES = (".csv", ".tsv", ".jsonl", ".txt")
SEPARATORS = {".csv": ",", ".tsv": "\t"}
LABEL = "label"
SPLITS = ("train", "test")

Row = tuple[int, list[str], str | None]  # line, texts, label


def load_text_split(root: str | Path, split: str) -> TextPairs:
    """Split ``split`` (``"train"`` or ``"test"``) of the pairs files in folder ``root``:
    ``root/<split>`` with one of the suffixes :data:`SUFFIXES` (exactly one such file), read by
    :func:`load_text_file`."""
    if split not in SPLITS:
        raise ValueError(f"split must be 'train' or 'test' for text_files, got {split!r}")
    found = [Path(root) / f"{split}{suffix}" for suffix in SUFFIXES
             if (Path(root) / f"{split}{suffix}").exists()]
    if not found:
        raise DatasetUnavailableError(
            f"pairs file not found: looked for {split}.csv, {split}.tsv, {split}.jsonl and "
            f"{split}.txt in {Path(root).resolve()}. Put there a file of (anchor, positive"
            f"[, negatives]) rows, or of plain sentences (see docs/text.md)")
    if len(found) > 1:
        raise ValueError(f"pairs files {' and '.join(map(str, found))} all exist; keep one "
                         f"of them")
    return load_text_file(found[0])


def load_text_file(path: str | Path) -> TextPairs:
    """The rows of the pairs file ``path`` (module docstring).

    A missing file raises :class:`~contrastkit.data.vision.DatasetUnavailableError` (a
    ``ValueError``); a folder, an unknown suffix, a missing or empty field, a row with more
    fields than the header, malformed JSON, text that is not UTF-8 or a file without rows a
    ``ValueError``; a file that cannot be read (no permission) a
    :class:`~contrastkit.files.FileAccessError`. Each names the file and, for a row, its line.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"pairs file {path} must end in {', '.join(SUFFIXES)}, got "
                         f"{path.suffix or 'no suffix'!r}")
    if path.is_dir():
        raise ValueError(f"pairs file {path} is a folder; expected a {suffix} file")
    if not path.is_file():
        raise DatasetUnavailableError(f"pairs file {path.resolve()} not found")
    where = f"pairs file {path}"
    text = read_utf8(path, where)
    rows: list[Row]
    if suffix == ".txt":
        rows = [(line, [sentence.strip()], None)
                for line, sentence in enumerate(text.splitlines(), start=1) if sentence.strip()]
    elif suffix == ".jsonl":
        rows = _json_rows(text, where)
    else:
        rows = _table_rows(text, SEPARATORS[suffix], where)
    if not rows:
        raise ValueError(f"{where} holds no rows")
    return _pairs(str(path), rows, where)


def _table_rows(text: str, separator: str, where: str) -> list[Row]:
    """The rows of a CSV or TSV file's ``text``."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{where} is empty: it needs a header row naming the columns "
                             f"(anchor, positive, negatives ...)")
        label, texts = _columns([name.strip() for name in header], where, 1)
        rows = []
        for fields in reader:
            line = reader.line_num
            if not fields:
                continue
            if len(fields) != len(header):
                more = "more" if len(fields) > len(header) else "fewer"
                raise ValueError(f"{where}, line {line}: the row has {len(fields)} fields, "
                                 f"{more} than the header's {len(header)} (separator "
                                 f"{separator!r})")
            rows.append(_row(line, [fields[i] for i in texts],
                             None if label is None else fields[label], header, texts, where))
    except csv.Error as error:
        raise ValueError(f"{where}, line {reader.line_num}: {error}") from None
    return rows


def _json_rows(text: str, where: str) -> list[Row]:
    """The rows of a JSON Lines file's ``text``."""
    rows, keys = [], None
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            record = json.loads(content)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}, line {line}: not a JSON object ({error.msg})") from None
        if not isinstance(record, dict) or not record:
            raise ValueError(f"{where}, line {line}: each line must hold a JSON object of "
                             f"columns, got {type(record).__name__}")
        if keys is None:
            keys = list(record)
            label, texts = _columns(keys, where, line)
        elif set(record) != set(keys):
            raise ValueError(f"{where}, line {line}: the keys {sorted(record)} differ from the "
                             f"first row's {sorted(keys)}; every row needs the same columns")
        values = [record[keys[i]] for i in texts]
        for key, value in zip([keys[i] for i in texts], values, strict=True):
            if not isinstance(value, str):
                raise ValueError(f"{where}, line {line}: column {key!r} must hold a string, "
                                 f"got {type(value).__name__}")
        value = None if label is None else record[LABEL]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
            raise ValueError(f"{where}, line {line}: the label must be a string or an "
                             f"integer, got {type(value).__name__}")
        rows.append(_row(line, values, None if value is None else str(value), keys, texts,
                         where))
    return rows


def _columns(names: list[str], where: str, line: int) -> tuple[int | None, list[int]]:
    """The label column's position (or ``None``) and the text columns' positions."""
    if len(set(names)) != len(names):
        raise ValueError(f"{where}, line {line}: the columns {names} repeat a name")
    label = names.index(LABEL) if LABEL in names else None
    texts = [i for i in range(len(names)) if i != label]
    if not texts:
        raise ValueError(f"{where}, line {line}: no text column, only {LABEL!r}")
    if label is not None and len(texts) == 1:
        raise ValueError(f"{where}, line {line}: a {LABEL!r} column needs pairs (anchor, "
                         f"positive): plain sentences have no negatives to keep apart")
    return label, texts


def _row(line: int, values: list[str], label: str | None, names: list[str],
         texts: list[int], where: str) -> Row:
    """A row's texts, stripped, and its label, each checked non-empty."""
    stripped = [value.strip() for value in values]
    for position, value in zip(texts, stripped, strict=True):
        if not value:
            raise ValueError(f"{where}, line {line}: empty text in column "
                             f"{names[position]!r}")
    if label is not None and not label.strip():
        raise ValueError(f"{where}, line {line}: empty {LABEL!r}")
    return line, stripped, None if label is None else label.strip()


def _pairs(name: str, rows: list[Row], where: str) -> TextPairs:
    """The :class:`TextPairs` of ``rows``; a row whose positive repeats its anchor (it would
    teach nothing) or whose negative repeats either (a contradiction) is an error."""
    for line, texts, _ in rows:
        if len(texts) > 1 and texts[1] == texts[0]:
            raise ValueError(f"{where}, line {line}: the positive repeats the anchor")
        if set(texts[2:]) & set(texts[:2]):
            raise ValueError(f"{where}, line {line}: a negative repeats the row's anchor or "
                             f"positive")
    width = len(rows[0][1])
    texts, ids = indexed([text for _, row, _ in rows for text in row])
    table = torch.tensor(ids, dtype=torch.long).view(len(rows), width)
    labels: torch.Tensor | None = None
    class_names: list[str] = []
    if rows[0][2] is not None:  # then every row has one (the label column)
        class_names, label_ids = indexed([str(label) for _, _, label in rows])
        labels = torch.tensor(label_ids, dtype=torch.long)
    if width == 1:
        return TextPairs(name, texts, table[:, 0])
    return TextPairs(name, texts, table[:, 0], table[:, 1], table[:, 2:], labels, class_names)
