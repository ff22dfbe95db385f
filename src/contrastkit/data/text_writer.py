"""Text pairs written as the files :mod:`~contrastkit.data.text_files` reads, so that rows made
here (mined negatives, the bundled corpus) train with ``dataset=text_files`` as they are.

The columns are ``anchor``, ``positive``, ``negative_1`` ... ``negative_k`` (plain sentences:
``sentence``) and, when the rows have classes, ``label`` last; the format follows the suffix
(``.jsonl``, ``.csv``, ``.tsv``; ``.txt`` for plain sentences). The file is written through a
temporary one in its folder, so a failed write leaves no partial file.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from contrastkit.files import run_folder_io, write_text_atomic

from .text_files import LABEL, SEPARATORS, SUFFIXES
from .text_pairs import TextPairs


def write_text_file(pairs: TextPairs, path: str | Path) -> Path:
    """Write the rows of ``pairs`` to ``path`` (module docstring) and return it;
    :func:`~contrastkit.data.load_text_file` reads back the same rows. A ``ValueError`` for an
    unknown suffix, pairs in a ``.txt`` file, or a text a ``.txt`` line cannot hold (a line
    break)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"pairs file {path} must end in {', '.join(SUFFIXES)}, got "
                         f"{path.suffix or 'no suffix'!r}")
    names = column_names(pairs)
    rows = [[pairs.texts[i] for i in row] for row in pairs.row_texts().tolist()]
    if pairs.labeled:
        rows = [[*row, pairs.class_names[label]] for row, label in
                zip(rows, pairs.labels.tolist(), strict=True)]
    if suffix == ".txt":
        if pairs.paired:
            raise ValueError(f"pairs file {path}: a .txt file holds plain sentences; write "
                             f"pairs to a .jsonl, .csv or .tsv file")
        if any("\n" in row[0] or "\r" in row[0] for row in rows):
            raise ValueError(f"pairs file {path}: a sentence holds a line break, which a .txt "
                             f"line cannot; write a .jsonl file")
        text = "".join(f"{row[0]}\n" for row in rows)
    elif suffix == ".jsonl":
        text = "".join(json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False) + "\n"
                       for row in rows)
    else:
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, delimiter=SEPARATORS[suffix], lineterminator="\n")
        writer.writerows([names, *rows])
        text = buffer.getvalue()
    with run_folder_io("create", path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)
    return path


def column_names(pairs: TextPairs) -> list[str]:
    """The columns of ``pairs`` as :func:`write_text_file` names them."""
    if not pairs.paired:
        return ["sentence"]
    negatives = [f"negative_{i}" for i in range(1, pairs.negatives.shape[1] + 1)]
    return ["anchor", "positive", *negatives, *([LABEL] if pairs.labeled else [])]
