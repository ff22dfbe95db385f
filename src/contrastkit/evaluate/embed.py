"""The representations of a trained run, saved for other tools (``contrastkit embed``).

:func:`embed_run` loads a run's checkpoint, passes a split of its dataset, without
augmentation and with the encoder in eval mode, through the encoder, and writes

- a ``.npz`` file with ``features`` (the backbone output, ``(N, f)``, float32), ``embeddings``
  (the projector output, what the loss sees, ``(N, d)``, float32) and, when the dataset has
  labels, ``labels`` (``(N,)``, int64); ``contrastkit geometry`` reads its ``features`` and
  ``labels``;
- or a ``.npy`` file with ``embeddings`` alone, which ``contrastkit geometry`` reads as well.

An encoder without a ``features`` method (a user's own, without a backbone/projector split)
has only its output: ``features`` then holds the same array as ``embeddings``. A text-pair
run (``task=text_pairs``) embeds every distinct text of the split, and adds ``texts``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from contrastkit.data import load_dataset
from contrastkit.dtypes import full_float32
from contrastkit.train import PretrainConfig, stage_progress, start_runtime
from contrastkit.train.inputs import (
    UNLABELED,
    LabeledDataset,
    built_in_encoder,
    check_rebuildable,
)
from contrastkit.train.run_folder import EMBEDDINGS
from contrastkit.train.text_pairs import build_sentence_model
from contrastkit.typing import Samples

from .features import extract_features
from .run import check_run_folder, load_run_checkpoint
from .text_pairs import text_arrays

SPLITS = ("train", "test")
SUFFIXES = (".npz", ".npy")


def embed_run(run_dir: str | Path, split: str = "train", out: str | Path | None = None,
              checkpoint: str = "last", device: str = "auto", progress: bool = True,
              encoder: torch.nn.Module | None = None, dataset: Samples | None = None) -> Path:
    """Write the representations of ``split`` of the run in ``run_dir`` (its ``checkpoint``)
    to ``out`` (default ``run_dir/embeddings-<split>.npz``) and return its path.

    A run trained with the user's own encoder or dataset needs the same objects again as
    ``encoder`` (its weights are loaded from the checkpoint) and ``dataset`` (the split to
    embed: ``split`` then only names the default file).
    """
    run_dir = check_run_folder(run_dir)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    out = run_dir / EMBEDDINGS.format(split=split) if out is None else Path(out)
    check_suffix(out)
    state = load_run_checkpoint(run_dir, checkpoint)
    config = PretrainConfig(**{**state["config"], "progress": False})
    needs = tuple(name for name, given in (("encoder", encoder), ("dataset", dataset))
                  if given is None)
    check_rebuildable(config, run_dir, "contrastkit embed", needs)
    runtime = start_runtime(device)
    if config.task == "text_pairs":  # every distinct text of the split
        texts = load_dataset(config.dataset, split, config.data_dir).texts
        encoder = build_sentence_model(config)
        _load_weights(encoder, state["model"], run_dir)
        return save_embeddings(out, text_arrays(encoder.to(runtime.device), list(texts),
                                                runtime.device))
    dataset = (load_dataset(config.dataset, split, config.data_dir) if dataset is None
               else LabeledDataset(dataset))
    if encoder is None:
        encoder = built_in_encoder(config, dataset, dataset[0][0])
    _load_weights(encoder, state["model"], run_dir)
    arrays = embed_dataset(encoder.to(runtime.device), dataset, runtime.device, progress,
                           config.num_workers)
    save_embeddings(out, arrays)
    return out


def embed_dataset(encoder: torch.nn.Module, dataset: Samples, device: torch.device | str = "cpu",
                  progress: bool = False, num_workers: int = 0) -> dict[str, np.ndarray]:
    """``features``, ``embeddings`` and (when the dataset has them) ``labels`` of every item
    of ``dataset`` (of ``(x, label)``, label -1 for none), as the module docstring says.
    Computed in full float32 on any device (no TF32 on a GPU, :func:`~contrastkit.dtypes.
    full_float32`): a GPU's features equal a CPU's up to float32 rounding."""
    with stage_progress(progress) as stages, full_float32():
        with stages.stage("projector outputs", len(dataset)) as advance:
            embeddings, labels = extract_features(encoder, dataset, device=device,
                                                  projector=True, num_workers=num_workers,
                                                  on_batch=advance)
        features = embeddings
        if hasattr(encoder, "features"):
            with stages.stage("backbone features", len(dataset)) as advance:
                features, _ = extract_features(encoder, dataset, device=device,
                                               num_workers=num_workers, on_batch=advance)
    arrays = {"features": features.numpy(), "embeddings": embeddings.numpy()}
    if not bool((labels == UNLABELED).all()):
        arrays["labels"] = labels.numpy()
    return arrays


def save_embeddings(path: str | Path, arrays: dict[str, np.ndarray]) -> Path:
    """Write ``arrays`` to ``path``: all of them to a ``.npz``, ``embeddings`` to a ``.npy``;
    through a temporary file in the same folder (created if missing), so a failed write leaves
    no partial file."""
    path = Path(path)
    check_suffix(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with open(temporary, "wb") as handle:
            if path.suffix.lower() == ".npz":
                # mypy matches the ** mapping against savez's allow_pickle: bool too
                np.savez(handle, **arrays)  # type: ignore[arg-type]
            else:
                np.save(handle, arrays["embeddings"])
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def check_suffix(path: Path) -> None:
    """An embeddings file is a ``.npz`` or a ``.npy``."""
    if Path(path).suffix.lower() not in SUFFIXES:
        raise ValueError(f"the embeddings file {path} must end in .npz (features, embeddings, "
                         f"labels) or .npy (embeddings)")


def _load_weights(encoder: torch.nn.Module, weights: dict, run_dir: Path) -> None:
    try:
        encoder.load_state_dict(weights)
    except RuntimeError as error:
        raise ValueError(f"encoder does not match the checkpoint of {run_dir} "
                         f"({str(error).splitlines()[0]}); pass the encoder the run was "
                         f"trained with") from error
