"""A tiny text-pair dataset (``tiny_paraphrases``: 64 training rows and 40 test queries of the
generated paraphrase corpus) and a tiny text-pair config for the tests; importing the module
registers the dataset (a spawned worker process imports it too)."""

from contrastkit.data import DATASETS, DatasetSpec, load_paraphrases
from contrastkit.train import load_config

TINY = "tiny_paraphrases"
SIZES = {"train": 64, "test": 40}

DATASETS.register(TINY, DatasetSpec(
    load=lambda root, split, download: load_paraphrases(split, rows=SIZES[split])))


def tiny_text_config(tmp_path, **changes):
    """``task=text_pairs`` on ``tiny_paraphrases`` with a narrow one-layer encoder, on the
    CPU: 4 steps of 16 rows per epoch, 2 epochs."""
    settings = {"task": "text_pairs", "runs_dir": str(tmp_path), "name": "tiny",
                "dataset": TINY, "batch_size": 16, "epochs": 2, "projector_out": 16,
                "text_width": 32, "text_layers": 1, "device": "cpu", "progress": False,
                "log_every": 2}
    settings.update(changes)
    return load_config(overrides=[f"{key}={value}" for key, value in settings.items()])
