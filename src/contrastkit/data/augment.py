"""The SimCLR augmentations, applied to whole batches on the training device.

``augment(images, generator)`` takes float images ``(B, C, H, W)`` in ``[0, 1]`` and returns
augmented images ``(B, C, size, size)``. Each image gets its own random parameters, drawn on
the CPU from the ``torch.Generator`` (so a seed gives the same views on any device) and then
applied with a few batched tensor operations:

1. random resized crop (area fraction ``crop_scale``, aspect ratio ``crop_ratio``) and
   horizontal flip, together as one affine resampling (``grid_sample``, bilinear);
2. color jitter with probability ``jitter_p``: brightness, contrast, saturation, hue;
3. grayscale with probability ``grayscale_p``;
4. Gaussian blur with probability ``blur_p`` (sigma uniform in ``blur_sigma``, kernel about
   10 % of the image side).

Differences from torchvision's per-image pipeline, on purpose: the crop's side lengths are
clipped to the image instead of re-drawn (torchvision retries 10 times, then falls back to a
center crop); the jitter is applied in a fixed order (torchvision shuffles it); hue is rotated
in YIQ space, a linear approximation of HSV's hue shift. The per-dataset recipes are in
the dataset table (:mod:`contrastkit.data.registry`, :func:`augmentation_for`).

To split one batch across processes (DDP) with the same views as one process, draw the
parameters of the global batch with :meth:`SimCLRAugment.sample` and apply a slice of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F

# RGB -> YIQ (NTSC); Y is the luminance used for grayscale and saturation.
_RGB_TO_YIQ = torch.tensor([[0.299, 0.587, 0.114],
                            [0.596, -0.274, -0.322],
                            [0.211, -0.523, 0.312]], dtype=torch.float64)
_YIQ_TO_RGB = torch.linalg.inv(_RGB_TO_YIQ)


@dataclass(frozen=True)
class AugmentParams:
    """Per-image random parameters of one batch (all tensors have ``B`` rows, on the CPU).

    ``crop``: ``(B, 4)`` center x, center y, width, height as fractions of the image;
    ``flip``: ``(B,)`` +1 or -1; ``brightness``, ``contrast``, ``saturation``: ``(B,)`` factors;
    ``hue``: ``(B,)`` rotation in turns; ``grayscale``: ``(B,)`` bool; ``blur_sigma``: ``(B,)``
    in pixels, 0 for no blur.
    """

    crop: torch.Tensor
    flip: torch.Tensor
    brightness: torch.Tensor
    contrast: torch.Tensor
    saturation: torch.Tensor
    hue: torch.Tensor
    grayscale: torch.Tensor
    blur_sigma: torch.Tensor

    def __getitem__(self, rows: slice) -> AugmentParams:
        """The parameters of a slice of the batch."""
        return AugmentParams(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})


@dataclass(frozen=True)
class SimCLRAugment:
    """The SimCLR augmentation recipe with its hyperparameters (see the module docstring)."""

    size: int
    crop_scale: tuple[float, float] = (0.08, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_p: float = 0.5
    jitter_p: float = 0.8
    brightness: float = 0.4
    contrast: float = 0.4
    saturation: float = 0.2
    hue: float = 0.1
    grayscale_p: float = 0.2
    blur_p: float = 0.0
    blur_sigma: tuple[float, float] = (0.1, 2.0)

    def __call__(self, images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return self.apply(images, self.sample(images.shape[0], generator))

    def sample(self, batch_size: int, generator: torch.Generator) -> AugmentParams:
        """Draw the random parameters of ``batch_size`` images from ``generator``."""

        def uniform(low: float, high: float) -> torch.Tensor:
            draw = torch.rand(batch_size, generator=generator, dtype=torch.float64)
            return low + (high - low) * draw

        def chance(p: float) -> torch.Tensor:
            return torch.rand(batch_size, generator=generator, dtype=torch.float64) < p

        area = uniform(*self.crop_scale)
        log_ratio = uniform(math.log(self.crop_ratio[0]), math.log(self.crop_ratio[1]))
        width = (area * log_ratio.exp()).sqrt().clamp(max=1.0)
        height = (area / log_ratio.exp()).sqrt().clamp(max=1.0)
        center_x = width / 2 + (1 - width) * uniform(0, 1)
        center_y = height / 2 + (1 - height) * uniform(0, 1)
        flip = torch.where(chance(self.flip_p), -1.0, 1.0).double()
        jitter = chance(self.jitter_p)

        def factor(strength: float) -> torch.Tensor:
            return torch.where(jitter, uniform(max(0.0, 1 - strength), 1 + strength), 1.0)

        brightness, contrast, saturation = (factor(s) for s in
                                            (self.brightness, self.contrast, self.saturation))
        hue = torch.where(jitter, uniform(-self.hue, self.hue), 0.0)
        grayscale = chance(self.grayscale_p)
        blur_sigma = torch.where(chance(self.blur_p), uniform(*self.blur_sigma), 0.0)
        crop = torch.stack([center_x, center_y, width, height], dim=1)
        return AugmentParams(crop, flip, brightness, contrast, saturation, hue, grayscale,
                             blur_sigma)

    def apply(self, images: torch.Tensor, params: AugmentParams) -> torch.Tensor:
        """Apply ``params`` (one row per image) to float images ``(B, C, H, W)`` in [0, 1]."""
        if images.ndim != 4 or images.shape[0] != params.flip.shape[0]:
            raise ValueError(f"images must have shape (B, C, H, W) with B = "
                             f"{params.flip.shape[0]}, got {tuple(images.shape)}")
        if not images.is_floating_point():
            raise ValueError(f"images must be floating point in [0, 1], got {images.dtype}")
        on: dict[str, Any] = {"device": images.device, "dtype": images.dtype}
        out = _resized_crop(images, params.crop.to(**on), params.flip.to(**on), self.size)
        out = _color_jitter(out, params, on)
        if out.shape[1] == 3:
            gray = _luminance(out).expand_as(out)
            out = torch.where(params.grayscale.to(images.device)[:, None, None, None], gray, out)
        if bool((params.blur_sigma > 0).any()):
            out = _gaussian_blur(out, params.blur_sigma.to(**on))
        return out


def _resized_crop(images: torch.Tensor, crop: torch.Tensor, flip: torch.Tensor, size: int
                  ) -> torch.Tensor:
    center_x, center_y, width, height = crop.unbind(1)
    theta = torch.zeros(images.shape[0], 2, 3, device=images.device, dtype=images.dtype)
    theta[:, 0, 0] = width * flip
    theta[:, 0, 2] = 2 * center_x - 1
    theta[:, 1, 1] = height
    theta[:, 1, 2] = 2 * center_y - 1
    grid = F.affine_grid(theta, [images.shape[0], images.shape[1], size, size],
                         align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border",
                         align_corners=False)


def _luminance(images: torch.Tensor) -> torch.Tensor:
    if images.shape[1] == 1:
        return images
    weights = _RGB_TO_YIQ[0].to(images.device, images.dtype)
    return torch.einsum("bchw,c->bhw", images, weights).unsqueeze(1)


def _color_jitter(images: torch.Tensor, params: AugmentParams, on: dict[str, Any]
                  ) -> torch.Tensor:
    column = (-1, 1, 1, 1)
    out = (images * params.brightness.to(**on).view(column)).clamp(0, 1)
    mean = _luminance(out).mean(dim=(1, 2, 3), keepdim=True)
    out = ((out - mean) * params.contrast.to(**on).view(column) + mean).clamp(0, 1)
    if out.shape[1] != 3:
        return out
    gray = _luminance(out)
    out = ((out - gray) * params.saturation.to(**on).view(column) + gray).clamp(0, 1)
    angle = 2 * math.pi * params.hue.to(**on)
    cos, sin = angle.cos(), angle.sin()
    rotation = torch.zeros(out.shape[0], 3, 3, **on)
    rotation[:, 0, 0] = 1
    rotation[:, 1, 1], rotation[:, 1, 2] = cos, -sin
    rotation[:, 2, 1], rotation[:, 2, 2] = sin, cos
    mix = _YIQ_TO_RGB.to(**on) @ rotation @ _RGB_TO_YIQ.to(**on)
    return torch.einsum("bij,bjhw->bihw", mix, out).clamp(0, 1)


def _gaussian_blur(images: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    batch, channels, height, width = images.shape
    radius = max(1, int(0.05 * min(height, width)))
    offsets = torch.arange(-radius, radius + 1, device=images.device, dtype=images.dtype)
    safe_sigma = sigma.clamp_min(1e-3)[:, None]
    kernel = torch.exp(-0.5 * (offsets[None, :] / safe_sigma) ** 2)
    identity = (offsets == 0).to(images.dtype).expand_as(kernel)
    kernel = torch.where(sigma[:, None] > 0, kernel, identity)
    kernel = (kernel / kernel.sum(1, keepdim=True)).repeat_interleave(channels, dim=0)
    flat = images.reshape(1, batch * channels, height, width)
    flat = F.pad(flat, (radius, radius, radius, radius), mode="reflect")
    flat = F.conv2d(flat, kernel[:, None, :, None], groups=batch * channels)
    flat = F.conv2d(flat, kernel[:, None, None, :], groups=batch * channels)
    return flat.reshape(batch, channels, height, width)
