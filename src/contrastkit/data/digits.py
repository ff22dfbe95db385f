"""scikit-learn's bundled handwritten digits: 1 797 grayscale 8x8 images, 10 classes, no download.

The default dataset of ``contrastkit pretrain``. Pixel values 0..16 are rescaled to ``uint8``
0..255. The train/test split is fixed (stratified, 20 % test, seed 0) so that every run is
evaluated on the same held-out images.
"""

from __future__ import annotations

import numpy as np
import torch

from .images import DatasetInfo, ImageTensorDataset, channel_stats

TEST_FRACTION = 0.2
SPLIT_SEED = 0


def load_digits(split: str) -> ImageTensorDataset:
    """The ``"train"`` (1 437 images) or ``"test"`` (360 images) split of the digits."""
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test' for digits, got {split!r}")
    bunch = sklearn_digits()
    pixels = np.rint(bunch.images * (255.0 / 16.0)).astype(np.uint8)
    index = np.arange(len(pixels))
    train, test = train_test_split(index, test_size=TEST_FRACTION, random_state=SPLIT_SEED,
                                   stratify=bunch.target)
    chosen = np.sort(train if split == "train" else test)
    images = torch.from_numpy(pixels[chosen]).unsqueeze(1)
    labels = torch.from_numpy(bunch.target[chosen])
    mean, std = channel_stats(torch.from_numpy(pixels[np.sort(train)]).unsqueeze(1))
    info = DatasetInfo("digits", channels=1, image_size=8, num_classes=10, mean=mean, std=std)
    return ImageTensorDataset(images, labels, info)
