"""Zero-shot classification of an image-text model (CLIP, Radford et al., "Learning Transferable
Visual Models From Natural Language Supervision", ICML 2021, arXiv:2103.00020, Sec. 3.1.4):
each class is the normalized mean of its prompts' normalized text embeddings (prompt
ensembling), and an image goes to the most cosine-similar class.

Ties count against the model, as in :mod:`.retrieval`: an image's rank is ``1 +`` the number of
other classes scored at least as high as its own, so a tie for the top score is a miss.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence

import torch

from contrastkit.dtypes import cast, promoted
from contrastkit.rows import unit_rows

from .retrieval import check_ks, unit_operands


@torch.no_grad()
def class_embeddings(encode_text: Callable, tokenizer: Callable, class_names: Sequence[str],
                     templates: Sequence[str], batch_size: int = 256) -> torch.Tensor:
    """CLIP's zero-shot classifier ``(C, d)``: row ``c`` is the L2-normalized mean over
    ``templates`` of the L2-normalized ``encode_text(tokenizer(prompts))`` of the prompts
    ``template.format(class_names[c])``.

    Each template holds one ``{}`` for the class name (CLIP's ``"a photo of a {}."``). The
    ``C * T`` prompts are encoded ``batch_size`` at a time, in order of class, under
    ``torch.no_grad``: ``tokenizer`` takes a list of strings, ``encode_text`` takes what it
    returns and gives one embedding row per prompt (put the model in eval mode and the tokens
    on its device yourself). The result is on ``encode_text``'s device, in its dtype and
    float32 at least; the mean over templates is taken in that dtype too.
    """
    names = _strings("class_names", class_names)
    templates = _strings("templates", templates)
    for template in templates:
        _check_template(template)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    per_class = len(templates)
    prompts = [template.format(name) for name in names for template in templates]
    means, pending = [], None
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start:start + batch_size]
        rows = encode_text(tokenizer(batch))
        if not isinstance(rows, torch.Tensor) or rows.ndim != 2 or rows.shape[0] != len(batch) \
                or rows.shape[1] == 0:
            shape = tuple(rows.shape) if isinstance(rows, torch.Tensor) else type(rows).__name__
            raise ValueError(f"encode_text must return one embedding row per prompt, shape "
                             f"({len(batch)}, d), got {shape}")
        if pending is not None and rows.shape[1] != pending.shape[1]:
            raise ValueError(f"encode_text must return rows of one width, got {rows.shape[1]} "
                             f"after {pending.shape[1]}")
        dtype = promoted(rows.dtype, torch.float32) if pending is None else pending.dtype
        rows = cast(rows, dtype)
        if not torch.isfinite(rows).all():
            raise ValueError(f"encode_text returned non-finite embeddings for prompts "
                             f"{start} to {start + len(batch) - 1}")
        rows = unit_rows(rows)
        pending = rows if pending is None else torch.cat([pending, rows])
        # average every class whose prompts are all in; keep the rest for the next batch
        complete = pending.shape[0] // per_class * per_class
        if complete:
            means.append(pending[:complete].view(-1, per_class, rows.shape[1]).mean(dim=1))
            pending = pending[complete:]
    return unit_rows(torch.cat(means))


@torch.no_grad()
def zero_shot_topk(image_embeddings: torch.Tensor, class_embeddings: torch.Tensor,
                   labels: torch.Tensor | Sequence[int], ks: Sequence[int] = (1, 5),
                   chunk: int = 1024) -> dict[str, float]:
    """``{"top1": ..., "top5": ...}`` in percent: how often an image's class (``labels``
    ``(N,)``, indices into the rows of ``class_embeddings`` ``(C, d)``) is among the ``k``
    classes most cosine-similar to its embedding (a row of ``image_embeddings`` ``(N, d)``);
    ties count against the model (module docstring). Rows of both are L2-normalized here, the
    similarities computed in their dtype, float32 at least, ``chunk`` images at a time. Each
    ``k`` must lie in ``[1, C]``."""
    images, classes = unit_operands(image_embeddings, "image_embeddings",
                                    class_embeddings, "class_embeddings")
    labels = _check_labels(labels, images.shape[0], classes.shape[0]).to(images.device)
    ks = check_ks(ks, classes.shape[0], "the number of classes")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    ranks: list[torch.Tensor] = []
    for start in range(0, images.shape[0], chunk):
        similarity = images[start:start + chunk] @ classes.T
        own = similarity.gather(1, labels[start:start + chunk, None])
        ranks.append((similarity >= own).sum(dim=1))  # the own class stands for the 1
    rank = torch.cat(ranks)
    return {f"top{k}": 100.0 * int((rank <= k).sum()) / rank.shape[0] for k in ks}


def zero_shot_accuracy(image_embeddings: torch.Tensor, class_embeddings: torch.Tensor,
                       labels: torch.Tensor | Sequence[int], k: int = 1, chunk: int = 1024
                       ) -> float:
    """Top-``k`` zero-shot accuracy in percent (top-1 by default: the share of images whose own
    class is strictly the most cosine-similar); :func:`zero_shot_topk` for one ``k``."""
    return zero_shot_topk(image_embeddings, class_embeddings, labels, (k,), chunk)[f"top{k}"]


def _strings(name: str, values: Sequence[str]) -> list[str]:
    try:
        strings = list(values) if not isinstance(values, str) else None
    except TypeError:
        strings = None
    if strings is None or not all(isinstance(value, str) for value in strings):
        raise ValueError(f"{name} must be a sequence of strings, got {values!r}")
    values = strings
    if not values:
        raise ValueError(f"{name} must not be empty")
    return values


def _check_template(template: str) -> None:
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template)
                  if field is not None]
        template.format("")
    except (ValueError, IndexError, KeyError):
        fields = None
    if fields != [""]:
        raise ValueError(f"templates must each hold one '{{}}' for the class name and no other "
                         f"field, got {template!r}")


def _check_labels(labels: object, n_images: int, n_classes: int) -> torch.Tensor:
    labels = torch.as_tensor(labels)
    if labels.ndim != 1 or labels.dtype == torch.bool or labels.is_floating_point() \
            or labels.is_complex():
        raise ValueError(f"labels must be a flat sequence of integers, got dtype {labels.dtype} "
                         f"and shape {tuple(labels.shape)}")
    if labels.shape[0] != n_images:
        raise ValueError(f"labels must have {n_images} entries (one per image), "
                         f"got {labels.shape[0]}")
    labels = labels.long()
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(f"labels must be class indices in [0, {n_classes}), got values in "
                         f"[{int(labels.min())}, {int(labels.max())}]")
    return labels
