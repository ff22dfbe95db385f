"""Evaluate a pretraining run: linear probe, kNN, and the negative-similarity variance."""

from __future__ import annotations

import json
from pathlib import Path

from contrastkit.data import augmentation_for, load_dataset
from contrastkit.models import build_encoder
from contrastkit.train.checkpoint import load_checkpoint
from contrastkit.train.config import PretrainConfig
from contrastkit.train.runtime import start_runtime

from .features import extract_features
from .knn import knn_accuracy
from .linear import linear_probe
from .similarity import augmented_pair_stats

RESULTS = "eval.json"


def evaluate_run(run_dir: str | Path, checkpoint: str = "last", linear_epochs: int = 100,
                 knn_k: int = 200, knn_temperature: float = 0.1, pairs: int = 5000,
                 device: str = "auto", seed: int = 0) -> dict:
    """Evaluate the encoder saved in ``run_dir`` and write ``run_dir/eval.json``.

    - linear probe (paper App. D): frozen backbone, features of the labeled training split
      without augmentation, L2-normalized; SGD lr 0.1, no weight decay, batch 256,
      ``linear_epochs`` epochs; top-1 and top-5 on the test split;
    - kNN: ``knn_k`` neighbours, cosine, weights ``exp(s / knn_temperature)``;
    - the paper's Table 1 statistic: variance (and mean) of the negative-pair similarities
      among ``pairs`` augmented positive pairs of training images, at the projector output.
    """
    run_dir = Path(run_dir)
    state = load_checkpoint(run_dir, checkpoint)
    config = PretrainConfig(**{**state["config"], "progress": False})
    runtime = start_runtime(device)
    train = load_dataset(config.dataset, "train", config.data_dir)
    test = load_dataset(config.dataset, "test", config.data_dir)
    info = train.info
    encoder = build_encoder(config.backbone, info.channels, info.mean, info.std,
                            config.projector_hidden, config.projector_out)
    encoder.load_state_dict(state["model"])
    encoder.to(runtime.device)
    train_x, train_y = extract_features(encoder, train, device=runtime.device,
                                        num_workers=config.num_workers)
    test_x, test_y = extract_features(encoder, test, device=runtime.device,
                                      num_workers=config.num_workers)
    linear = linear_probe(train_x, train_y, test_x, test_y, info.num_classes,
                          epochs=linear_epochs, seed=seed)
    knn = knn_accuracy(train_x, train_y, test_x, test_y, info.num_classes, knn_k,
                       knn_temperature)
    stats = augmented_pair_stats(encoder, train, augmentation_for(config.dataset,
                                                                  info.image_size),
                                 pairs=pairs, seed=seed, device=runtime.device)
    results = {
        "run": str(run_dir),
        "epochs_completed": state["epochs_completed"],
        "linear_top1": linear["top1"], "linear_top5": linear["top5"],
        "knn_top1": knn["top1"], "knn_top5": knn["top5"],
        "neg_sim_var": stats.negative_var, "neg_sim_mean": stats.negative_mean,
        "pos_sim_mean": stats.positive_mean, "pairs": stats.positive_count,
        "protocol": {"linear_epochs": linear_epochs, "linear_lr": 0.1, "linear_batch": 256,
                     "knn_k": knn_k, "knn_temperature": knn_temperature, "seed": seed},
    }
    (run_dir / RESULTS).write_text(json.dumps(results, indent=2) + "\n")
    return results

