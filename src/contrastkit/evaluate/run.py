"""Evaluate a pretraining run: linear probe, kNN, and the negative-similarity variance."""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch.profiler import record_function

from contrastkit.data import augmentation_for, load_dataset
from contrastkit.geometry import similarity_stats
from contrastkit.train import PretrainConfig, load_checkpoint, stage_progress, start_runtime
from contrastkit.train.checkpoint import Advice
from contrastkit.train.inputs import built_in_encoder, check_rebuildable
from contrastkit.train.matryoshka import matryoshka_prefixes
from contrastkit.train.progress import Advance, StageReporter
from contrastkit.train.text_pairs import build_sentence_model
from contrastkit.typing import Samples

from .features import extract_features
from .image_text import has_zero_shot, image_text_measurements
from .knn import knn_accuracy, neighbours
from .linear import linear_probe
from .pair_stats import augmented_pairs, distance_measurements
from .prefixes import PREFIXES, knn_per_prefix
from .text_pairs import text_pair_measurements

RESULTS = "eval.json"
#: How evaluate's and embed's Python API (``checkpoint="previous"``) and command line
#: (``--checkpoint previous``) word the options that an unusable checkpoint's error advises.
API_OPTIONS = {"use": 'checkpoint="{}"', "overwrite": "pretrain(config, overwrite=True)"}
CLI_OPTIONS = {"use": "--checkpoint {}",
               "overwrite": "`contrastkit pretrain <its settings> --overwrite`"}
#: The options of :func:`measure_run` by their Python names (the command line maps them).
OPTION_NAMES = {name: name for name in ("checkpoint", "linear_solver", "linear_epochs", "knn_k",
                                        "knn_temperature", "pairs")}


def evaluate_run(run_dir: str | Path, checkpoint: str = "last", linear_epochs: int | None = None,
                 knn_k: int = 200, knn_temperature: float = 0.1, pairs: int = 5000,
                 device: str = "auto", seed: int = 0, progress: bool = True,
                 linear_solver: str = "lbfgs") -> dict:
    """Evaluate the encoder saved in ``run_dir`` (:func:`measure_run`) and write the results
    to ``run_dir/eval.json`` (:func:`write_results`)."""
    results = measure_run(run_dir, checkpoint, linear_epochs, knn_k, knn_temperature, pairs,
                          device, seed, progress, linear_solver)
    write_results(run_dir, results)
    return results


def measure_run(run_dir: str | Path, checkpoint: str = "last", linear_epochs: int | None = None,
                knn_k: int = 200, knn_temperature: float = 0.1, pairs: int = 5000,
                device: str = "auto", seed: int = 0, progress: bool = True,
                linear_solver: str = "lbfgs") -> dict:
    """The evaluation results of the encoder saved in ``run_dir``, without writing anything:

    - linear probe: frozen backbone, features of the labeled training split without
      augmentation, L2-normalized; multinomial logistic regression solved exactly by L-BFGS at
      the penalty the paper's App. D probe amounts to on CIFAR
      (:data:`~contrastkit.evaluate.linear.L2_PENALTY`; ``linear_solver="lbfgs"``, the
      default), or the App. D SGD itself (``linear_solver="sgd"``: lr 0.1, no weight decay,
      batch 256, ``linear_epochs`` epochs, 100 unless given); top-1 and top-5 on the test
      split;
    - kNN: ``knn_k`` neighbours (capped at the training split's size; the protocol records
      the number used), cosine, weights ``exp(s / knn_temperature)``;
    - the paper's Table 1 statistic: variance (and mean) of the negative-pair similarities
      among ``pairs`` augmented positive pairs of training images, at the projector output;
    - on the same pairs, LMCL's ``margin_fraction`` (negative pairs inside the config's band
      ``(delta_plus, delta_minus)``) and ``distance_histogram`` (their Fig. 2).

    An image-text run (``task=image_text``) reports zero-shot top-1 and retrieval recall at 1,
    5 and 10 on the test split, and takes those similarity statistics of cross-modal pairs
    (:func:`~contrastkit.evaluate.image_text.image_text_measurements`); its probes read the
    image tower's features, and are skipped for a dataset without class labels. A text-pair
    run (``task=text_pairs``) reports the retrieval of the test split's positives from its
    anchors (recall at 1, 5 and 10, MRR@10, nDCG@10, MAP@R) and those statistics of training
    pairs (:func:`~contrastkit.evaluate.text_pairs.text_pair_measurements`); it has no probes.
    A run trained with ``matryoshka_dims`` adds a task's retrieval results for each prefix
    of the embedding, and a run of ``task=views`` the kNN of each prefix of the projected
    embedding, under ``"matryoshka"`` (:mod:`~contrastkit.evaluate.prefixes`).

    ``linear_epochs`` with the L-BFGS probe is a ``ValueError`` (it has no epochs; it would be
    ignored). With ``progress``, each stage (features, linear probe, kNN, pair statistics) is
    shown on standard error (see :func:`contrastkit.train.progress.stage_progress`); each runs
    under the profiler label ``contrastkit/evaluate/<stage>``, the loading of the checkpoint,
    data and encoder under ``contrastkit/evaluate/setup``.
    """
    protocol = check_options(checkpoint, linear_solver, linear_epochs, knn_k, knn_temperature,
                             pairs)
    run_dir = check_run_folder(run_dir)
    runtime = start_runtime(device)
    with record_function("contrastkit/evaluate/setup"):
        state, config, encoder, train, test = _load(run_dir, checkpoint, runtime.device)
    results = {"run": str(run_dir), "epochs_completed": state["epochs_completed"]}
    with stage_progress(progress) as stages:
        if config.task == "text_pairs":  # no images, no classes to probe
            with _stage(stages, "retrieval, pair statistics", 1) as advance:
                results.update(text_pair_measurements(
                    encoder, train, test, runtime.device, pairs, seed, config.delta_plus,
                    config.delta_minus, prefix_dims(config)))
                advance()
            return {**results, "protocol": {"seed": seed}}
        if config.task == "image_text":
            measured = "retrieval, pair statistics"
            if has_zero_shot(test):
                measured = f"zero-shot, {measured}"
            with _stage(stages, measured, 1) as advance:
                results.update(image_text_measurements(
                    encoder, train, test, runtime.device, pairs, seed, config.delta_plus,
                    config.delta_minus, prefix_dims(config)))
                advance()
        if not has_labels(train):  # a captions file: no classes to probe
            return {**results, "protocol": {"seed": seed}}
        train_x, train_y = _features(stages, "train features", encoder, train, runtime.device,
                                     config.num_workers)
        test_x, test_y = _features(stages, "test features", encoder, test, runtime.device,
                                   config.num_workers)
        steps = protocol.get("linear_epochs", 1)
        with _stage(stages, "linear probe", steps) as advance:
            def step_done(_step: int, loss: float) -> None:
                if linear_solver == "sgd":
                    advance(note=f"training loss {loss:.4f}")

            linear = linear_probe(train_x, train_y, test_x, test_y, train.info.num_classes,
                                  epochs=protocol.get("linear_epochs", 1), seed=seed,
                                  on_epoch=step_done, solver=linear_solver)
            if linear_solver == "lbfgs":
                advance()
        with _stage(stages, "kNN", 1) as advance:
            knn = knn_accuracy(train_x, train_y, test_x, test_y, train.info.num_classes, knn_k,
                               knn_temperature)
            advance()
        if config.task == "views" and prefix_dims(config):
            with _stage(stages, "kNN per prefix", 1) as advance:
                results[PREFIXES] = knn_per_prefix(encoder, train, test, runtime.device,
                                                   prefix_dims(config), knn_k, knn_temperature,
                                                   config.num_workers)
                advance()
        if config.task == "views":
            with _stage(stages, "pair statistics", 1) as advance:
                u, v = augmented_pairs(encoder, train,
                                       augmentation_for(config.dataset,
                                                        train.info.image_size),
                                       pairs=pairs, seed=seed, device=runtime.device)
                stats = similarity_stats(u, v)
                results.update({
                    "neg_sim_var": stats.negative_var, "neg_sim_mean": stats.negative_mean,
                    "pos_sim_mean": stats.positive_mean, "pairs": stats.positive_count,
                    **distance_measurements(u, v, config.delta_plus, config.delta_minus)})
                advance()
    return {
        **results,
        "linear_top1": linear["top1"], "linear_top5": linear["top5"],
        "knn_top1": knn["top1"], "knn_top5": knn["top5"],
        "protocol": {**protocol, "knn_k": neighbours(knn_k, len(train_x)),
                     "knn_temperature": knn_temperature,
                     "seed": seed},
    }


def prefix_dims(config: PretrainConfig) -> tuple[int, ...]:
    """The nested prefixes a run trained (``matryoshka_dims``), each measured on its own;
    ``()`` without."""
    prefixes = matryoshka_prefixes(config)
    return () if prefixes is None else prefixes[0]


def has_labels(dataset: Any) -> bool:
    """Whether ``dataset``'s images carry class labels (a captions file's do not)."""
    labels = getattr(dataset, "labels", None)
    return dataset.info.num_classes > 0 and (labels is None or bool((labels >= 0).all()))


def probe_run(run_dir: str | Path, checkpoint: str = "last", knn_k: int = 200,
              knn_temperature: float = 0.1, device: str = "auto") -> dict:
    """The linear probe (L-BFGS) and kNN top-1 and top-5 of the encoder saved in ``run_dir``,
    and its ``epochs_completed``: :func:`measure_run` without the augmented pairs, cheap
    enough to watch a run converge (a callback can call it on the checkpoint of the epoch that
    just ended)."""
    check_options(checkpoint, "lbfgs", None, knn_k, knn_temperature)
    run_dir = check_run_folder(run_dir)
    runtime = start_runtime(device)
    state, config, encoder, train, test = _load(run_dir, checkpoint, runtime.device)
    train_x, train_y = extract_features(encoder, train, device=runtime.device)
    test_x, test_y = extract_features(encoder, test, device=runtime.device)
    classes = train.info.num_classes
    linear = linear_probe(train_x, train_y, test_x, test_y, classes)
    knn = knn_accuracy(train_x, train_y, test_x, test_y, classes, knn_k, knn_temperature)
    return {"epochs_completed": state["epochs_completed"], "linear_top1": linear["top1"],
            "linear_top5": linear["top5"], "knn_top1": knn["top1"], "knn_top5": knn["top5"]}


def check_options(checkpoint: str = "last", linear_solver: str = "lbfgs",
                  linear_epochs: int | None = None, knn_k: int = 200,
                  knn_temperature: float = 0.1, pairs: int = 5000,
                  names: dict[str, str] = OPTION_NAMES) -> dict:
    """Check :func:`measure_run`'s options before any work, each error naming the option as
    ``names`` calls it (``names["knn_k"] == "--knn-k"`` on the command line); return the
    linear probe's protocol (:func:`linear_protocol`)."""
    from contrastkit.checks.scalars import check_choice, check_count, check_positive

    check_choice(names["checkpoint"], checkpoint, ("last", "previous"))
    protocol = linear_protocol(linear_solver, linear_epochs, names)
    check_count(names["knn_k"], knn_k, 1)
    check_positive(names["knn_temperature"], knn_temperature)
    check_count(names["pairs"], pairs, 2)  # a negative pair needs two positive pairs
    return protocol


def check_run_folder(run_dir: str | Path, setting: str = "run_dir") -> Path:
    """``run_dir`` as a ``Path``; a ``ValueError`` naming ``setting`` when it does not exist
    (suggesting the folder beside it with the closest name) or is a file (a run is a folder,
    ``runs/<name>``)."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        siblings = ([path.name for path in run_dir.parent.iterdir() if path.is_dir()]
                    if run_dir.parent.is_dir() else [])
        close = difflib.get_close_matches(run_dir.name, siblings, n=1)
        raise ValueError(f"{setting} {run_dir} does not exist"
                         + (f" (did you mean {run_dir.parent / close[0]}?)" if close else "")
                         + "; it must be a run folder (runs/<name>, where `contrastkit "
                           "pretrain` writes)")
    if not run_dir.is_dir():
        raise ValueError(f"{setting} {run_dir} is a file; it must be a run folder "
                         f"(runs/<name>, where `contrastkit pretrain` writes)")
    return run_dir


def load_run_checkpoint(run_dir: Path, checkpoint: str) -> dict:
    """:func:`~contrastkit.train.load_checkpoint`, an unusable checkpoint's error advising
    this API's options (``checkpoint="previous"``, see :data:`API_OPTIONS`)."""
    try:
        return load_checkpoint(run_dir, checkpoint)
    except Advice as error:
        raise error.reworded(API_OPTIONS) from error


def linear_protocol(solver: str, epochs: int | None,
                    names: dict[str, str] = OPTION_NAMES) -> dict:
    """What eval.json records of the linear probe: the solver and its settings
    (``ValueError`` for an unknown solver, bad epochs, or epochs with the L-BFGS probe, naming
    the options as ``names`` calls them)."""
    from contrastkit.checks.scalars import check_choice, check_count

    from .linear import L2_PENALTY, MAX_ITER, SOLVERS, TOLERANCE

    check_choice(names["linear_solver"], solver, SOLVERS)
    if solver == "lbfgs":
        if epochs is not None:
            raise ValueError(f"{_given(names['linear_epochs'], epochs)} would be ignored: the "
                             f"L-BFGS linear probe solves to convergence; epochs belong to "
                             f"{_given(names['linear_solver'], 'sgd')}")
        return {"linear_solver": "lbfgs", "linear_l2_penalty": L2_PENALTY,
                "linear_tolerance": TOLERANCE, "linear_max_iter": MAX_ITER}
    epochs = 100 if epochs is None else check_count(names["linear_epochs"], epochs, 1)
    return {"linear_solver": "sgd", "linear_epochs": epochs, "linear_lr": 0.1,
            "linear_batch": 256, "linear_momentum": 0.9}


def _given(name: str, value: object) -> str:
    """How a caller gives option ``name`` the ``value``: ``--knn-k 5`` or ``knn_k=5``."""
    return f"{name} {value}" if name.startswith("-") else f"{name}={value}"


def _load(run_dir: Path, checkpoint: str, device: torch.device
          ) -> tuple[dict, PretrainConfig, torch.nn.Module, Any, Any]:
    """The run's checkpoint, config, encoder (on ``device``) and its train and test splits."""
    state = load_run_checkpoint(run_dir, checkpoint)
    config = PretrainConfig(**{**state["config"], "progress": False})
    check_rebuildable(config, run_dir, "contrastkit evaluate")
    train = load_dataset(config.dataset, "train", config.data_dir)
    test = load_dataset(config.dataset, "test", config.data_dir)
    if config.task == "text_pairs":
        encoder = build_sentence_model(config)
    else:
        encoder = built_in_encoder(config, train, train[0][0])
    encoder.load_state_dict(state["model"])
    return state, config, encoder.to(device), train, test


@contextlib.contextmanager
def _stage(stages: StageReporter, name: str, total: int) -> Iterator[Advance]:
    """``stages.stage(name, total)`` under the profiler label ``contrastkit/evaluate/<name>``."""
    with record_function(f"contrastkit/evaluate/{name}"), stages.stage(name, total) as advance:
        yield advance


def _features(stages: StageReporter, name: str, encoder: torch.nn.Module, dataset: Samples,
              device: torch.device, num_workers: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`extract_features` of ``dataset`` as the stage ``name``, one unit per image."""
    with _stage(stages, name, len(dataset)) as advance:
        return extract_features(encoder, dataset, device=device, num_workers=num_workers,
                                on_batch=advance)


def write_results(run_dir: str | Path, results: dict) -> Path:
    """Write ``results`` to ``run_dir/eval.json`` atomically (a temporary file in the same
    folder, then renamed), so a failed write (a read-only folder, a full disk) raises
    ``OSError`` and leaves no partial file behind."""
    path = Path(run_dir) / RESULTS
    temporary = path.with_name(f".{RESULTS}.tmp")
    try:
        temporary.write_text(json.dumps(results, indent=2) + "\n")
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    return path
