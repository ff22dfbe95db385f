"""Reading saved embeddings: ``.npy``, ``.npz`` or ``.pt`` files holding two views or one set
of features, with optional labels (what ``contrastkit geometry`` reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

FORMATS = ".npy (NumPy array), .npz (NumPy arrays by name) or .pt/.pth (torch.save of tensors)"


def load_embeddings(path: Path) -> dict:
    """Read a ``.npy``, ``.npz`` or ``.pt`` file of embeddings into tensors: ``{"u", "v"}``
    (two views) or ``{"features"}``, plus ``"labels"`` when the file holds them (and, with two
    views, ``"duplicates"``: ids, rows with one id duplicates of each other). An array
    ``(2, B, d)``, a pair of ``(B, d)`` arrays or a mapping with ``"u"`` and ``"v"`` are two
    views; an array ``(B, d)`` or a mapping with ``"features"`` is one set of features. Views
    or features without a row, or with a NaN or an infinity, are a ``ValueError`` naming the
    file."""
    data = _embeddings(path)
    for key in ("u", "v", "features"):
        if key in data:
            _check_rows(data[key], f"EMBEDDINGS {path}: {key!r}")
    return data


def _check_rows(embeddings: torch.Tensor, where: str) -> None:
    """A ``ValueError`` naming ``where`` unless ``embeddings`` has a row and is finite."""
    if embeddings.dim() == 0 or embeddings.shape[0] == 0 or embeddings.numel() == 0:
        raise ValueError(f"{where} holds no embeddings (shape {tuple(embeddings.shape)})")
    finite = torch.isfinite(embeddings)
    if not bool(finite.all()):
        row = int((~finite).nonzero()[0, 0])
        raise ValueError(f"{where} holds NaN or infinity (first in row {row}); expected "
                         f"finite embeddings")


def _embeddings(path: Path) -> dict:
    """The arrays of :func:`load_embeddings`, unchecked."""
    raw = _read(path)
    if isinstance(raw, dict):
        data = {key: _tensor(raw[key], f"{path}[{key!r}]") for key in raw}
        if {"u", "v"} <= data.keys():
            return {key: data[key] for key in ("u", "v", "labels", "duplicates") if key in data}
        if "features" in data:
            return {key: data[key] for key in ("features", "labels") if key in data}
        raise ValueError(
            f"EMBEDDINGS {path} must hold keys 'u' and 'v', or 'features'; found {sorted(data)}"
        )
    if isinstance(raw, (list, tuple)):
        if len(raw) != 2:
            raise ValueError(f"EMBEDDINGS {path} holds a sequence of {len(raw)} items; expected 2")
        return {"u": _tensor(raw[0], f"{path}[0]"), "v": _tensor(raw[1], f"{path}[1]")}
    array = _tensor(raw, str(path))
    if array.dim() == 3 and array.shape[0] == 2:
        return {"u": array[0], "v": array[1]}
    if array.dim() == 2:
        return {"features": array}
    raise ValueError(
        f"EMBEDDINGS {path} must be an array of shape (2, B, d) (two views) or (B, d) "
        f"(features), got shape {tuple(array.shape)}"
    )


def load_labels(path: Path, option: str = "--labels") -> torch.Tensor:
    """Read a 1-D file of integer ids (``.npy``, ``.npz`` or ``.pt``): class ids, or the
    duplicate ids of ``option="--duplicates"``."""
    labels = _tensor(_read(path), str(path))
    if labels.dim() != 1:
        raise ValueError(f"{option} {path} must be 1-D, got shape {tuple(labels.shape)}")
    return labels


def _read(path: Path) -> Any:
    """The content of a .npy, .npz or .pt file; anything else, or a file that does not parse
    in the format its suffix names, is a ``ValueError`` naming the file and the formats."""
    if path.is_dir():
        raise ValueError(f"{path} is a folder; expected a file: {FORMATS}")
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".npz", ".pt", ".pth"):
        raise ValueError(f"{path}: expected {FORMATS}; got suffix {suffix!r}")
    try:
        return _parse(path, suffix)
    except Exception as error:  # whatever the parser raises, the file is the problem
        raise ValueError(
            f"{path} is not a readable {suffix} file ({type(error).__name__}: {error}); "
            f"expected {FORMATS}"
        ) from error


def _parse(path: Path, suffix: str) -> Any:
    if suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    return torch.load(path, map_location="cpu", weights_only=True)


def _tensor(value: object, where: str) -> torch.Tensor:
    """``value`` as a tensor of real numbers; a complex, text or other non-numeric array is a
    ``ValueError`` naming ``where`` and the dtype (a complex array would otherwise lose its
    imaginary part without a word on the way to float64)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise ValueError(f"{where} holds {_kind(value.dtype.kind)} values (dtype "
                             f"{value.dtype}); it must hold real numbers")
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{where} must be an array or tensor, got {type(value).__name__}")
    if value.is_complex():
        raise ValueError(f"{where} holds complex values (dtype {value.dtype}); it must hold "
                         "real numbers")
    return value


def _kind(kind: str) -> str:
    """A NumPy dtype kind in words."""
    return {"c": "complex", "U": "text", "S": "byte-string", "O": "Python object",
            "M": "datetime", "m": "timedelta", "V": "structured"}.get(kind, "non-numeric")
