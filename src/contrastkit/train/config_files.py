"""A run's settings from a YAML config file and ``key=value`` overrides, over the defaults of
:class:`~.config.PretrainConfig` (what ``contrastkit pretrain CONFIG key=value ...`` reads)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from contrastkit.yaml_files import read_yaml

from .config import PretrainConfig


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["loss=dcl", "epochs=5"]`` -> ``{"loss": "dcl", "epochs": "5"}``."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"overrides must look like key=value, got {item!r}")
        overrides[key.strip()] = value.strip()
    return overrides


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()
                ) -> PretrainConfig:
    """Defaults, then the YAML file at ``path`` (if any), then ``key=value`` ``overrides``."""
    config = PretrainConfig()
    if path is not None:
        config = config.with_overrides(read_config_file(path))
    return config.with_overrides(parse_overrides(list(overrides)))


def read_config_file(path: str | Path) -> dict:
    """The settings in the YAML config file ``path`` (an empty file has none)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist")
    content = read_yaml(path, f"config file {path}") or {}
    if not isinstance(content, dict):
        raise ValueError(f"config file {path} must hold a mapping of key: value")
    return content
