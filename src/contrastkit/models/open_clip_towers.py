"""Image and text towers from open_clip (the optional extra: ``pip install
'contrastkit[clip]'``), as a two-tower model (:class:`~contrastkit.models.TwoTowerBase`).

:func:`open_clip_two_tower` builds any open_clip architecture by name
(:func:`open_clip_model_names`), randomly initialised or from a LOCAL checkpoint file; nothing
is ever downloaded: no pretrained tag is ever passed to open_clip, and the names whose
tokenizer or text tower lives on the Hugging Face Hub (the SigLIP and SigLIP 2 models, the
Hugging Face text towers: roberta, xlm-roberta, mt5, nllb, ...) are refused with a
``ValueError`` before anything is built. :func:`open_clip_offline_model_names` lists the
names that work offline: those that use open_clip's ``SimpleTokenizer``, whose BPE vocabulary
ships inside the open_clip wheel (the CLIP ViTs and ResNets, ConvNeXt, EVA, ViTamin,
MobileCLIP, PE-Core, ...).

Small configurations for CPU runs (:data:`OPEN_CLIP_CONFIGS`) are registered with open_clip
under names starting with ``ck-``; their text towers keep the 49 408-token vocabulary of
``SimpleTokenizer``:

- ``ck-tiny-vit``: ViT on 32x32 images, patch 8, width 64, 2 layers, 2 heads; text context
  32, width 64, 2 layers, 2 heads; ``embed_dim`` 64 (3.3 M parameters, 3.2 M of them the
  token embedding);
- ``ck-small-vit``: ViT on 32x32 images, patch 4, width 128, 4 layers, 4 heads; text context
  32, width 128, 4 layers, 4 heads; ``embed_dim`` 128.

open_clip's ``logit_scale`` and ``logit_bias`` (and a CoCa model's caption decoder) are not
part of the two-tower model: the loss owns the temperature, scale and bias.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from copy import deepcopy
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .two_tower import TwoTowerBase

_INSTALL = "pip install 'contrastkit[clip]'"

#: The small open_clip configurations (open_clip's config format) that
#: :func:`register_open_clip_configs` adds to open_clip's registry of architectures.
OPEN_CLIP_CONFIGS: dict[str, dict] = {
    "ck-tiny-vit": {
        "embed_dim": 64,
        "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 64, "layers": 2,
                       "head_width": 32},
        "text_cfg": {"context_length": 32, "vocab_size": 49408, "width": 64, "heads": 2,
                     "layers": 2},
    },
    "ck-small-vit": {
        "embed_dim": 128,
        "vision_cfg": {"image_size": 32, "patch_size": 4, "width": 128, "layers": 4,
                       "head_width": 32},
        "text_cfg": {"context_length": 32, "vocab_size": 49408, "width": 128, "heads": 4,
                     "layers": 4},
    },
}

#: Attributes of an open_clip model that the two-tower model drops: the loss owns the
#: temperature, scale and bias, and two-tower training never uses a CoCa caption decoder.
_DROPPED = ("logit_scale", "logit_bias", "text_decoder")


def _import_open_clip() -> Any:
    try:
        import open_clip
    except ImportError as error:
        raise ValueError(f"open_clip towers need the package open_clip_torch: {_INSTALL}") \
            from error
    return open_clip


def register_open_clip_configs() -> None:
    """Add :data:`OPEN_CLIP_CONFIGS` to open_clip's registry of architectures (its factory's config
    dictionary, which ``open_clip.create_model``, ``get_model_config`` and ``get_tokenizer``
    read), so that ``open_clip.create_model("ck-tiny-vit")`` works. Idempotent."""
    _import_open_clip()
    from open_clip import factory

    registry = factory._MODEL_CONFIGS  # rebound by open_clip's rescans: read it each time
    for name, config in OPEN_CLIP_CONFIGS.items():
        registry.setdefault(name, deepcopy(config))


def open_clip_model_names() -> list[str]:
    """Every architecture open_clip knows, :data:`OPEN_CLIP_CONFIGS` included."""
    register_open_clip_configs()
    import open_clip

    return list(open_clip.list_models())


def _download_reason(model_name: str, config: dict) -> str | None:
    """Why building ``model_name`` would download something, or ``None``: a Hugging Face
    text tower or tokenizer, or a SigLIP SentencePiece vocabulary (open_clip picks that
    tokenizer from the name)."""
    text = config.get("text_cfg", {})
    if text.get("hf_model_name"):
        return f"its text tower is the Hugging Face model {text['hf_model_name']!r}"
    if text.get("hf_tokenizer_name"):
        return f"its tokenizer is the Hugging Face tokenizer {text['hf_tokenizer_name']!r}"
    if "siglip" in model_name.lower():
        return "its tokenizer is a SigLIP SentencePiece vocabulary"
    return None


def open_clip_offline_model_names() -> list[str]:
    """The names :func:`open_clip_two_tower` builds without any download: those whose
    tokenizer is open_clip's ``SimpleTokenizer``, with its vocabulary inside the wheel."""
    import open_clip

    return [name for name in open_clip_model_names()
            if _download_reason(name, open_clip.get_model_config(name)) is None]


def _image_size(size: int | Sequence[int]) -> tuple[int, int]:
    return (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))


class OpenClipTwoTower(TwoTowerBase):
    """An open_clip model (``clip``, without ``logit_scale``/``logit_bias``) behind the
    two-tower interface.

    Images in [0, 1] are resized as open_clip's evaluation transform does (shortest side to
    the model's input size, bicubic with antialiasing, then a centre crop), a single channel
    is repeated to three, and the result is normalized with the model's mean and std.
    :meth:`image_features` is the visual tower's pooled output before its projection (for a
    ViT, and a timm trunk without attention pooling; other visual towers, such as the
    ResNets whose attention pooling projects, give their output, of ``embed_dim``).
    """

    mean: torch.Tensor  # buffers (1, 3, 1, 1), registered in __init__
    std: torch.Tensor

    def __init__(self, clip: nn.Module, tokenizer: Callable[[Sequence[str]], torch.Tensor],
                 embed_dim: int, image_size: int | Sequence[int], mean: Sequence[float],
                 std: Sequence[float]) -> None:
        super().__init__()
        self.clip: Any = clip  # open_clip's model: its towers are read by name, untyped
        self.tokenizer = tokenizer
        self.embed_dim = embed_dim
        self.image_size = _image_size(image_size)
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1),
                             persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1),
                             persistent=False)
        self._path = self._pooled_path()
        self.features_dim = self._features_dim()

    def _pooled_path(self) -> str:
        """How :meth:`image_features` reads the visual tower: ``"vit"`` (before the
        projection), ``"trunk"`` (a timm trunk, before the head) or ``"visual"``."""
        from open_clip.timm_model import TimmModel
        from open_clip.transformer import VisionTransformer

        visual = self.clip.visual
        if isinstance(visual, VisionTransformer) and hasattr(visual, "_embeds") \
                and hasattr(visual, "_pool") and isinstance(visual.proj, torch.Tensor):
            return "vit"
        if isinstance(visual, TimmModel) and "pool" not in dict(visual.head.named_children()):
            return "trunk"
        return "visual"

    def _features_dim(self) -> int:
        path, visual = self._path, self.clip.visual
        if path == "vit":
            return int(visual.proj.shape[0])
        if path == "trunk":
            classes = getattr(visual.trunk, "num_classes", 0)
            return int(classes or visual.trunk.num_features)
        return self.embed_dim

    def prepare(self, images: torch.Tensor) -> torch.Tensor:
        """Images in [0, 1] ``(B, 1 or 3, H, W)`` -> the visual tower's input."""
        if images.ndim != 4 or images.shape[1] not in (1, 3):
            raise ValueError("images must have shape (batch, 1 or 3 channels, height, width), "
                             f"got {tuple(images.shape)}")
        height, width = images.shape[-2:]
        target_h, target_w = self.image_size
        if (height, width) != (target_h, target_w):
            scale = max(target_h / height, target_w / width)
            resized = (max(target_h, round(height * scale)), max(target_w, round(width * scale)))
            images = F.interpolate(images, size=resized, mode="bicubic", align_corners=False,
                                   antialias=True).clamp(0, 1)
            top, left = (resized[0] - target_h) // 2, (resized[1] - target_w) // 2
            images = images[..., top:top + target_h, left:left + target_w]
        if images.shape[1] == 1:
            images = images.expand(-1, 3, -1, -1)
        return (images - self.mean) / self.std

    def image_features(self, images: torch.Tensor) -> torch.Tensor:
        x = self.prepare(images)
        visual, path = self.clip.visual, self._path
        if path == "vit":
            return visual._pool(visual.transformer(visual._embeds(x)))[0]
        if path == "trunk":
            return visual.trunk(x)
        return visual(x)

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        return self.clip.encode_image(self.prepare(images), normalize=False)

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.clip.encode_text(tokens, normalize=False)


def _read_state_dict(open_clip: Any, checkpoint: Path) -> dict:
    """The state dict in ``checkpoint``, in open_clip's key names: open_clip's own reader
    (safetensors or ``torch.load``; a ``{"state_dict": ...}`` wrapper and DDP's ``module.``
    prefix are undone), then the ``clip.`` prefix of an :class:`OpenClipTwoTower`'s own state
    dict is dropped, and so are the parameters the two-tower model drops."""
    try:
        state = open_clip.factory.load_state_dict(str(checkpoint))
    except Exception as error:  # an unreadable file: a ValueError naming it
        raise ValueError(f"checkpoint {str(checkpoint)!r} could not be read as a state dict: "
                         f"{error}") from error
    if not isinstance(state, dict) or not state:
        raise ValueError(f"checkpoint {str(checkpoint)!r} must hold a state dict (a non-empty "
                         f"dict of tensors), got {type(state).__name__}")
    if all(key.startswith("clip.") for key in state):
        state = {key[len("clip."):]: value for key, value in state.items()}
    return {key: value for key, value in state.items() if key.split(".")[0] not in _DROPPED}


def _load_checkpoint(open_clip: Any, clip: nn.Module, checkpoint: Path, model_name: str
                     ) -> None:
    """Load ``checkpoint`` into ``clip`` (already without :data:`_DROPPED`), with open_clip's
    conversions of older and third-party layouts."""
    from open_clip import model as oc_model

    state = _read_state_dict(open_clip, checkpoint)
    convert = getattr(getattr(open_clip, "convert", None), "convert_state_dict", None)
    if convert is not None:
        state = convert(clip, state)
    if "positional_embedding" in state and not hasattr(clip, "positional_embedding"):
        state = oc_model.convert_to_custom_text_state_dict(state)
    oc_model.resize_pos_embed(state, clip)
    if hasattr(oc_model, "resize_text_pos_embed"):
        oc_model.resize_text_pos_embed(state, clip)
    try:
        clip.load_state_dict(state, strict=True)
    except RuntimeError as error:
        raise ValueError(f"checkpoint {str(checkpoint)!r} does not fit the open_clip model "
                         f"{model_name!r}: {' '.join(str(error).split())}") from error


def check_model_name(model_name: str, argument: str = "model_name") -> None:
    """A ``ValueError`` naming ``argument`` unless ``model_name`` is an open_clip architecture
    that builds offline (:func:`open_clip_offline_model_names`)."""
    open_clip = _import_open_clip()
    names = open_clip_model_names()
    if not isinstance(model_name, str) or model_name not in names:
        raise ValueError(f"{argument} must be an open_clip architecture, one of "
                         f"{', '.join(names)}; got {model_name!r}")
    reason = _download_reason(model_name, open_clip.get_model_config(model_name))
    if reason is not None:
        raise ValueError(f"{argument}: the open_clip model {model_name!r} needs a download "
                         f"({reason}), and contrastkit never downloads; the names that work "
                         f"offline: {', '.join(open_clip_offline_model_names())}")


def open_clip_two_tower(model_name: str, checkpoint: str | Path | None = None, *,
                        setting: str = "checkpoint") -> OpenClipTwoTower:
    """The open_clip architecture ``model_name`` (a name in :func:`open_clip_model_names`
    that works offline, :func:`open_clip_offline_model_names`) as a two-tower model, with
    ``tokenizer = open_clip.get_tokenizer(model_name)``.

    Randomly initialised (under torch's global seed), or with the weights in ``checkpoint``:
    a LOCAL file, either an open_clip checkpoint (what ``open_clip.create_model(...,
    pretrained=<file>)`` reads: a state dict saved with ``torch.save`` or as
    ``.safetensors``, possibly wrapped in ``{"state_dict": ...}``, or big_vision's
    ``.npz``) or the state dict of an :class:`OpenClipTwoTower`. ``logit_scale`` and
    ``logit_bias`` in the file are ignored. Never downloads. A checkpoint that is not a file
    is a ``ValueError`` naming ``setting`` (the caller's name of the argument:
    ``clip_checkpoint`` in a run's config).
    """
    path = None
    if checkpoint is not None:
        path = Path(checkpoint)
        if not path.is_file():
            found = (f"; the files in {str(path.parent)!r}: {', '.join(_listing(path.parent))}"
                     if path.parent.is_dir() else "")
            raise ValueError(f"{setting} must be a local file, got {str(checkpoint)!r}, which "
                             f"does not exist{found}")
    open_clip = _import_open_clip()
    check_model_name(model_name)
    config = open_clip.get_model_config(model_name)
    clip = open_clip.create_model(model_name)  # never a pretrained tag: nothing downloads
    if path is not None and path.suffix in (".npz", ".npy"):
        open_clip.load_checkpoint(clip, str(path))  # big_vision weights, into the full model
        path = None
    for name in _DROPPED:
        if hasattr(clip, name):
            delattr(clip, name)
    if path is not None:
        _load_checkpoint(open_clip, clip, path, model_name)
    preprocess = open_clip.model.get_model_preprocess_cfg(clip)
    return OpenClipTwoTower(clip, open_clip.get_tokenizer(model_name),
                            embed_dim=int(config["embed_dim"]),
                            image_size=preprocess.get("size", clip.visual.image_size),
                            mean=preprocess.get("mean", open_clip.OPENAI_DATASET_MEAN),
                            std=preprocess.get("std", open_clip.OPENAI_DATASET_STD))


def _listing(folder: Path, limit: int = 20) -> list[str]:
    """Up to ``limit`` file names in ``folder``, for an error message."""
    names = sorted(entry.name for entry in folder.iterdir() if entry.is_file())
    return names[:limit] + ([f"... ({len(names) - limit} more)"] if len(names) > limit else []) \
        or ["(none)"]


class OpenClipText(nn.Module):
    """The text tower of an open_clip model as a sentence encoder
    (:mod:`contrastkit.models.sentence`): ``forward(tokens)`` is open_clip's ``encode_text``,
    not normalized; ``features`` is the same (open_clip pools and projects in one step)."""

    def __init__(self, clip: nn.Module, tokenizer: Callable[[Sequence[str]], torch.Tensor],
                 embed_dim: int) -> None:
        super().__init__()
        self.clip: Any = clip  # open_clip's model: its text tower is read by name, untyped
        self.tokenizer = tokenizer
        self.embed_dim = self.features_dim = embed_dim

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.clip.encode_text(tokens, normalize=False)

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        return self(tokens)


def open_clip_text_encoder(model_name: str, checkpoint: str | Path | None = None, *,
                           setting: str = "checkpoint") -> OpenClipText:
    """The text tower of :func:`open_clip_two_tower`'s model (same arguments, same offline
    rules; a checkpoint's image tower is read and dropped) as an :class:`OpenClipText`."""
    towers = open_clip_two_tower(model_name, checkpoint, setting=setting)
    del towers.clip.visual
    return OpenClipText(towers.clip, towers.tokenizer, towers.embed_dim)
