"""ImageNet preprocessing: Inception-style random crop for training, resize + center crop for evaluation.

Follows the input pipeline of the official TPU EfficientNet code (tensorflow/tpu,
``models/official/efficientnet/preprocessing.py``, used by EfficientNet arXiv 1905.11946), in PIL:

- train: a random crop covering 8%..100% of the image area with aspect ratio in [3/4, 4/3] (the
  ``distorted_bounding_box_crop`` of the Inception pipeline, Szegedy et al. arXiv 1409.4842), up to 10 tries,
  falling back to the evaluation crop when none fits; resized to ``image_size`` (bicubic); a horizontal flip
  with probability 1/2; optionally AutoAugment on the uint8 image.
  The aspect ratio is drawn log-uniformly (TensorFlow draws it uniformly; the range is the same).
- eval: the shorter side resized to ``image_size / crop_fraction`` (bicubic), then the central
  ``image_size`` square. The official code's ``CROP_PADDING = 32`` is ``crop_fraction = s / (s + 32)``
  (0.875 at 224 px); see :func:`crop_fraction_for`.

Both end with scaling to [0, 1] and normalizing with the ImageNet channel mean and standard deviation,
giving a float32 ``(3, image_size, image_size)`` tensor.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np
import torch
from PIL import Image

from tasks.imagenet.autoaugment import AutoAugment

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CROP_PADDING = 32
RESAMPLE = Image.Resampling.BICUBIC

Box = tuple[float, float, float, float]  # (left, upper, right, lower) in input pixels


def crop_fraction_for(image_size: int, crop_padding: int = CROP_PADDING) -> float:
    """The official EfficientNet center-crop fraction at a resolution: ``s / (s + 32)``."""
    return image_size / (image_size + crop_padding)


def to_normalized_tensor(img: Image.Image) -> torch.Tensor:
    """RGB PIL image -> float32 ``(3, H, W)`` tensor, scaled to [0, 1] and normalized per channel."""
    array = np.asarray(img.convert("RGB"), dtype=np.float32) / 255.0  # (H, W, 3)
    array = (array - np.asarray(IMAGENET_MEAN, dtype=np.float32)) / np.asarray(IMAGENET_STD, dtype=np.float32)
    return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def center_crop_box(width: int, height: int, crop_fraction: float) -> Box:
    """The central square whose side is ``crop_fraction`` of the shorter side."""
    side = crop_fraction * min(width, height)
    left, upper = (width - side) / 2, (height - side) / 2
    return left, upper, left + side, upper + side


def random_crop_box(
    width: int,
    height: int,
    rng: random.Random,
    scale: tuple[float, float] = (0.08, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    attempts: int = 10,
) -> Box | None:
    """An Inception-style crop box (area fraction in ``scale``, width/height in ``ratio``), or None."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(attempts):
        target_area = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        crop_w = round(math.sqrt(target_area * aspect))
        crop_h = round(math.sqrt(target_area / aspect))
        if 0 < crop_w <= width and 0 < crop_h <= height:
            left = rng.randint(0, width - crop_w)
            upper = rng.randint(0, height - crop_h)
            return left, upper, left + crop_w, upper + crop_h
    return None


class TrainTransform:
    """Random crop + resize, horizontal flip, optional AutoAugment, normalize.

    ``min_area``: smallest crop area fraction (the official 0.08); ``hflip``: random horizontal flips (on by
    default; the smoke tier's digits turn it off, since a mirrored digit is another glyph).

    ``autoaugment``: False/None for none, True for the paper's ImageNet policy, or a policy name
    (see :data:`tasks.imagenet.autoaugment.POLICIES`); or any other PIL-to-PIL augmentation as ``augment`` (e.g.
    :class:`tasks.imagenet.randaugment.RandAugment`), applied at the same place. ``rng`` defaults to the ``random``
    module.
    """

    def __init__(
        self,
        image_size: int = 224,
        crop_fraction: float = 0.875,
        autoaugment: bool | str | None = False,
        rng: random.Random | None = None,
        min_area: float = 0.08,
        hflip: bool = True,
        augment: Callable[[Image.Image], Image.Image] | None = None,
    ) -> None:
        if augment is not None and autoaugment:
            raise ValueError("TrainTransform: give autoaugment or augment, not both")
        self.image_size = image_size
        self.crop_fraction = crop_fraction
        self.rng = rng
        self.scale = (min_area, 1.0)
        self.hflip = hflip
        policy = "imagenet" if autoaugment is True else autoaugment
        self.autoaugment = AutoAugment(policy, rng=rng) if policy else augment

    def __call__(self, img: Image.Image) -> torch.Tensor:
        rng = self.rng or random
        img = img.convert("RGB")
        box = random_crop_box(img.width, img.height, rng, self.scale)
        box = box or center_crop_box(img.width, img.height, self.crop_fraction)
        img = img.resize((self.image_size, self.image_size), RESAMPLE, box=box)
        if self.hflip and rng.random() < 0.5:
            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        if self.autoaugment is not None:
            img = self.autoaugment(img)
        return to_normalized_tensor(img)


class EvalTransform:
    """Resize the shorter side to ``image_size / crop_fraction``, take the central square, normalize."""

    def __init__(self, image_size: int = 224, crop_fraction: float = 0.875) -> None:
        if not 0.0 < crop_fraction <= 1.0:
            raise ValueError(f"crop_fraction must be in (0, 1]; got {crop_fraction}")
        self.image_size = image_size
        self.crop_fraction = crop_fraction

    def __call__(self, img: Image.Image) -> torch.Tensor:
        img = img.convert("RGB")
        resized = round(self.image_size / self.crop_fraction)
        scale = resized / min(img.width, img.height)
        new_size = (max(resized, round(img.width * scale)), max(resized, round(img.height * scale)))
        img = img.resize(new_size, RESAMPLE)
        left = (img.width - self.image_size) // 2
        upper = (img.height - self.image_size) // 2
        img = img.crop((left, upper, left + self.image_size, upper + self.image_size))
        return to_normalized_tensor(img)
