"""A tiny pretraining config for the tests (digits, small CNN, narrow projector, CPU)."""

from contrastkit.train import PretrainConfig


def tiny_config(tmp_path, **changes) -> PretrainConfig:
    settings = {"runs_dir": str(tmp_path), "name": "tiny", "batch_size": 128, "epochs": 3,
                "warmup_epochs": 1, "projector_hidden": 32, "projector_out": 16,
                "device": "cpu", "progress": False}
    settings.update(changes)
    return PretrainConfig(**settings)
