"""Hard negatives for text pairs, mined with a trained run (``contrastkit mine``): every text is
embedded by the run's sentence encoder, and each row ``(anchor, positive[, negatives])`` gets
the ``k`` corpus texts its anchor scores highest (cosine) that are not its own, exactly
(:func:`~contrastkit.evaluate.mining.mine_hard_negatives`: the filters, the tie rule).

**Not its own**, by text: a row's negatives are never its anchor, nor a positive of that anchor
in any row (an anchor repeated with several positives has them all excluded), nor, with
``keep_negatives``, one of the row's own negatives. Paraphrases of the positive are not known
by text; the margin filters are there to keep them out.

**The rows written** are ``(anchor, positive, [its own negatives,] mined_1 ... mined_k)``, with
the row's label when the rows have classes; rows with fewer than ``k`` candidates left by the
filters are dropped (every row of a pairs file has the same number of negatives), and counted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import torch

from contrastkit.checks.scalars import check_count
from contrastkit.data import load_dataset, load_text_file, write_text_file
from contrastkit.data.text_files import SUFFIXES
from contrastkit.data.text_pairs import TextPairs, indexed
from contrastkit.data.vision import DatasetUnavailableError
from contrastkit.dtypes import full_float32
from contrastkit.files import write_json_atomic
from contrastkit.train import PretrainConfig, stage_progress, start_runtime
from contrastkit.train.inputs import check_rebuildable
from contrastkit.train.progress import StageReporter
from contrastkit.train.text_pairs import build_sentence_model

from .mining import mine_hard_negatives
from .run import check_run_folder, load_run_checkpoint
from .text_pairs import embed_sentences

#: What ``contrastkit mine`` writes in its output folder: the mined rows, the run's test split
#: (so that ``dataset=text_files data_dir=FOLDER`` retrains and evaluates on the same queries)
#: and a record of the mining.
TRAIN_FILE = "train.jsonl"
TEST_FILE = "test.jsonl"
RECORD = "mining.json"
DEFAULT_OUT = "mined"


def mine_text_pairs(encoder: torch.nn.Module, pairs: TextPairs,
                    corpus: Sequence[str] | None = None, k: int = 3, *,
                    max_score: float | None = None, margin: float | None = None,
                    relative_margin: float | None = None, keep_negatives: bool = False,
                    device: torch.device | str = "cpu", batch_size: int = 256,
                    stages: StageReporter | None = None) -> tuple[TextPairs, dict]:
    """The rows of ``pairs`` with ``k`` negatives mined from ``corpus`` (default: the rows'
    distinct positives and negatives) by the sentence ``encoder`` (module docstring), and a
    summary: the sizes, how many rows were dropped, and the mean scores of the positives and
    of the mined negatives. ``batch_size`` texts are embedded at a time, shortest first;
    ``stages`` reports the embedding and the mining."""
    k = check_count("k", k, 1)
    batch_size = check_count("batch_size", batch_size, 1)
    if pairs.positives is None:
        raise ValueError(f"{pairs.name} holds plain sentences: mining needs rows of an anchor "
                         f"and its positive")
    stages = stages or StageReporter()
    if corpus is None:
        used = torch.unique(torch.cat([pairs.positives, pairs.negatives.flatten()]))
        corpus = [pairs.texts[i] for i in used.tolist()]
    corpus = list(dict.fromkeys(corpus))  # each text once
    if not corpus:
        raise ValueError("corpus must hold at least one text")
    position = {text: i for i, text in enumerate(corpus)}
    texts = corpus + [text for text in pairs.texts if text not in position]
    row_texts = pairs.row_texts().tolist()
    embeddings = _embed(encoder, texts, device, batch_size, stages)
    index = {text: i for i, text in enumerate(texts)}
    anchor = [index[pairs.texts[row[0]]] for row in row_texts]
    positive = [index[pairs.texts[row[1]]] for row in row_texts]
    with stages.stage("mine", len(row_texts)) as advance:
        mined = mine_hard_negatives(
            embeddings[anchor].to(device), embeddings[:len(corpus)].to(device), k,
            positives=embeddings[positive].to(device),
            exclude=_own_texts(pairs, row_texts, position, keep_negatives),
            max_score=max_score, margin=margin, relative_margin=relative_margin,
            on_queries=advance)
    full = (mined.counts == k).cpu()
    found = mined.indices.cpu()
    assert mined.positive_scores is not None  # positives were given
    rows = [[pairs.texts[i] for i in row[:2 + (pairs.negatives.shape[1] if keep_negatives
                                                 else 0)]]
            + [corpus[j] for j in found[r].tolist()]
            for r, row in enumerate(row_texts) if full[r]]
    if not rows:
        raise ValueError(f"no row of {pairs.name} has {k} negatives left by the filters; "
                         f"loosen them or lower k")
    written = _pairs(pairs, rows, full)
    summary = {"rows": len(pairs), "rows_written": len(rows),
               "rows_dropped": len(pairs) - len(rows), "corpus": len(corpus), "k": k,
               "max_score": max_score, "margin": margin, "relative_margin": relative_margin,
               "keep_negatives": keep_negatives,
               "positive_score_mean": float(mined.positive_scores.double().mean()),
               "negative_score_mean": float(mined.scores.cpu()[full].double().mean())}
    return written, summary


def mine_run(run_dir: str | Path, out: str | Path | None = None, *,
             corpus: str | Path | None = None, anchors: str | Path | None = None, k: int = 3,
             max_score: float | None = None, margin: float | None = None,
             relative_margin: float | None = None, keep_negatives: bool = False,
             checkpoint: str = "last", device: str = "auto", batch_size: int = 256,
             progress: bool = True) -> dict:
    """Mine hard negatives with the text-pair run in ``run_dir`` (its ``checkpoint``) and write
    them to the folder ``out`` (default ``run_dir/mined``): :data:`TRAIN_FILE`, the rows of
    :func:`mine_text_pairs`; :data:`TEST_FILE`, the run's test split as it is (when its dataset
    has one); :data:`RECORD`, what was done. Returns that record.

    The rows are the run's training split, or the pairs file ``anchors``; the corpus is every
    distinct text of the file ``corpus`` (one a line in a ``.txt``, or every column of a pairs
    file), or by default the rows' positives and negatives. Then
    ``contrastkit pretrain task=text_pairs dataset=text_files data_dir=OUT`` trains on them.
    """
    run_dir = check_run_folder(run_dir)
    out = run_dir / DEFAULT_OUT if out is None else Path(out)
    _check_out(out)
    state = load_run_checkpoint(run_dir, checkpoint)
    config = PretrainConfig(**{**state["config"], "progress": False})
    if config.task != "text_pairs":
        raise ValueError(f"{run_dir} is a task={config.task} run; mining needs a sentence "
                         f"encoder (task=text_pairs)")
    check_rebuildable(config, run_dir, "contrastkit mine", ("encoder",))
    rows = (load_dataset(config.dataset, "train", config.data_dir) if anchors is None
            else load_text_file(anchors))
    texts = None if corpus is None else list(load_text_file(corpus).texts)
    try:
        test = load_dataset(config.dataset, "test", config.data_dir)
    except DatasetUnavailableError:
        test = None
    runtime = start_runtime(device)
    encoder = build_sentence_model(config)
    encoder.load_state_dict(state["model"])
    start = time.perf_counter()
    with stage_progress(progress) as stages:
        mined, summary = mine_text_pairs(
            encoder.to(runtime.device), rows, texts, k, max_score=max_score, margin=margin,
            relative_margin=relative_margin, keep_negatives=keep_negatives,
            device=runtime.device, batch_size=batch_size, stages=stages)
    record = {"run": str(run_dir), "checkpoint": checkpoint,
              "anchors": rows.name, "corpus_file": None if corpus is None else str(corpus),
              **summary, "seconds": round(time.perf_counter() - start, 2),
              "device": str(runtime.device), "train_file": str(out / TRAIN_FILE),
              "test_file": None if test is None else str(out / TEST_FILE)}
    write_text_file(mined, out / TRAIN_FILE)
    if test is not None:
        write_text_file(test, out / TEST_FILE)
    write_json_atomic(out / RECORD, record)
    return record


def _check_out(out: Path) -> None:
    """The output folder may hold an earlier mining's files, but no other pairs file that
    ``dataset=text_files`` would find beside them."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"out {out} is a file; expected a folder")
    others = [out / f"{split}{suffix}" for split in ("train", "test") for suffix in SUFFIXES
              if suffix != ".jsonl" and (out / f"{split}{suffix}").exists()]
    if others:
        raise ValueError(f"out {out} holds {others[0].name}, which dataset=text_files would "
                         f"read beside the mined {TRAIN_FILE}; choose another folder")


def _embed(encoder: torch.nn.Module, texts: list[str], device: torch.device | str,
           batch_size: int, stages: StageReporter) -> torch.Tensor:
    """The embeddings of ``texts`` on the CPU, embedded shortest first (less padding), in full
    float32 (:func:`~contrastkit.dtypes.full_float32`)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    embeddings = None
    with stages.stage("embed texts", len(texts)) as advance, full_float32():
        for start in range(0, len(texts), batch_size):
            chosen = order[start:start + batch_size]
            batch = embed_sentences(encoder, [texts[i] for i in chosen], device,
                                    batch_size=batch_size)
            if embeddings is None:
                embeddings = batch.new_empty(len(texts), batch.shape[1])
            embeddings[torch.tensor(chosen)] = batch
            advance(len(chosen))
    assert embeddings is not None  # texts is not empty
    return embeddings


def _own_texts(pairs: TextPairs, row_texts: list[list[int]], position: dict[str, int],
               keep_negatives: bool) -> list[list[int]]:
    """Each row's corpus indices that are its own (module docstring)."""
    positives: dict[int, set[int]] = {}
    for row in row_texts:
        positives.setdefault(row[0], set()).add(row[1])
    excluded = []
    for row in row_texts:
        own = {row[0], *positives[row[0]], *(row[2:] if keep_negatives else ())}
        excluded.append(sorted(position[pairs.texts[i]] for i in own
                               if pairs.texts[i] in position))
    return excluded


def _pairs(pairs: TextPairs, rows: list[list[str]], kept: torch.Tensor) -> TextPairs:
    """The :class:`TextPairs` of the written ``rows`` (the rows of ``pairs`` where ``kept``),
    with their labels."""
    texts, ids = indexed([text for row in rows for text in row])
    table = torch.tensor(ids, dtype=torch.long).view(len(rows), len(rows[0]))
    labels = pairs.labels[kept] if pairs.labeled else None
    return TextPairs(f"{pairs.name}, mined", texts, table[:, 0], table[:, 1], table[:, 2:],
                     labels, pairs.class_names)
