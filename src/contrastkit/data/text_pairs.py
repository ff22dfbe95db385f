"""Text pairs for sentence-embedding training (``task=text_pairs``): rows of an anchor, its
positive and any number of negatives, with an optional class label per row; or plain sentences
(one text per row, no positive), which SimCSE pairs with themselves.

Every distinct text is stored once (:attr:`TextPairs.texts`) and the rows hold indices into it,
so duplicates are known at the input, by their text, before anything is embedded: two rows that
share a text (the same positive, or one row's negative equal to another's anchor) are found by
comparing two integers (:meth:`TextPairs.row_texts`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

UNLABELED = -1


class TextPairs:
    """Rows of texts: ``anchor``, ``positive`` (absent for plain sentences) and ``k`` negatives
    (``k >= 0``, the same for every row), each an index into :attr:`texts`.

    Attributes:
        name: what the rows are (a file's path, ``"paraphrases"``), for messages.
        texts: the distinct texts, each non-empty.
        anchors: int64 ``(N,)``; ``positives``: int64 ``(N,)`` or ``None`` (plain sentences);
            ``negatives``: int64 ``(N, k)``.
        labels: int64 ``(N,)``, each row's class in ``[0, len(class_names))``, or all
            :data:`UNLABELED` (-1) when the rows have no classes.
        class_names: the name of each class (the label column's values), or ``()``.
    """

    def __init__(self, name: str, texts: Sequence[str], anchors: torch.Tensor,
                 positives: torch.Tensor | None = None, negatives: torch.Tensor | None = None,
                 labels: torch.Tensor | None = None, class_names: Sequence[str] = ()
                 ) -> None:
        self.name = name
        self.texts = tuple(texts)
        for text in self.texts:
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"texts must hold non-empty strings, got {text!r}")
        if len(set(self.texts)) != len(self.texts):
            raise ValueError("texts must be distinct (rows share a text by its index)")
        self.anchors = self._indices("anchors", anchors, 1)
        rows = self.anchors.shape[0]
        if rows == 0:
            raise ValueError(f"{name} holds no rows")
        self.positives = None if positives is None else self._indices("positives", positives,
                                                                      1, rows)
        if negatives is None:
            negatives = torch.zeros(rows, 0, dtype=torch.long)
        self.negatives = self._indices("negatives", negatives, 2, rows)
        if self.positives is None and self.negatives.shape[1]:
            raise ValueError("negatives need positives: plain sentences have neither")
        self.class_names = tuple(class_names)
        if labels is None:
            labels = torch.full((rows,), UNLABELED, dtype=torch.long)
        self.labels = self._labels(labels, rows)

    def _indices(self, name: str, values: torch.Tensor, ndim: int, rows: int | None = None
                 ) -> torch.Tensor:
        values = torch.as_tensor(values)
        if values.dtype != torch.long or values.ndim != ndim:
            raise ValueError(f"{name} must be an int64 tensor with {ndim} dimension(s), got "
                             f"{values.dtype} of shape {tuple(values.shape)}")
        if rows is not None and values.shape[0] != rows:
            raise ValueError(f"{name} must have one entry per row ({rows}), got "
                             f"{values.shape[0]}")
        if values.numel() and (values.min() < 0 or values.max() >= len(self.texts)):
            raise ValueError(f"{name} must index texts, in [0, {len(self.texts)})")
        return values.contiguous()

    def _labels(self, labels: torch.Tensor, rows: int) -> torch.Tensor:
        labels = torch.as_tensor(labels)
        if labels.dtype != torch.long or labels.shape != (rows,):
            raise ValueError(f"labels must be an int64 tensor of shape ({rows},), got "
                             f"{labels.dtype} of shape {tuple(labels.shape)}")
        if labels.min() < UNLABELED or labels.max() >= len(self.class_names):
            raise ValueError(f"labels must be -1 or a class in [0, len(class_names)) = "
                             f"[0, {len(self.class_names)})")
        unlabeled = labels == UNLABELED
        if bool(unlabeled.any()) and not bool(unlabeled.all()):
            raise ValueError("labels must give every row a class, or none (all -1)")
        return labels.contiguous()

    def __len__(self) -> int:
        return self.anchors.shape[0]

    @property
    def paired(self) -> bool:
        """Whether the rows have positives (pairs), not plain sentences."""
        return self.positives is not None

    @property
    def labeled(self) -> bool:
        """Whether the rows have class labels."""
        return bool((self.labels != UNLABELED).all())

    def positives_or_anchors(self) -> torch.Tensor:
        """Each row's positive; for plain sentences, the anchor itself (SimCSE's pair)."""
        return self.anchors if self.positives is None else self.positives

    def row_texts(self) -> torch.Tensor:
        """Every text of each row, int64 ``(N, 1 + [1] + k)``: its anchor, its positive (for
        pairs) and its negatives."""
        columns = [self.anchors[:, None]]
        if self.positives is not None:
            columns.append(self.positives[:, None])
        return torch.cat([*columns, self.negatives], dim=1)

    def sentences(self) -> TextPairs:
        """The plain sentences of these rows: every distinct text they hold (anchors,
        positives, negatives), each once, in the order of :attr:`texts`, without labels (what
        SimCSE trains on)."""
        used = torch.unique(self.row_texts())
        return TextPairs(self.name, [self.texts[i] for i in used.tolist()],
                         torch.arange(used.shape[0]))

    def __repr__(self) -> str:
        kind = (f"pairs with {self.negatives.shape[1]} negative(s) each" if self.paired
                else "plain sentences")
        return f"TextPairs({self.name!r}: {len(self)} rows of {kind}, {len(self.texts)} texts)"


def indexed(texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """The distinct ``texts`` in order of first appearance, and each text's index among them."""
    index: dict[str, int] = {}
    ids = [index.setdefault(text, len(index)) for text in texts]
    return list(index), ids
