"""AutoAugment: learned augmentation policies, applied to PIL images.

Cubuk, Zoph, Mané, Vasudevan, Le, "AutoAugment: Learning Augmentation Policies from Data", CVPR 2019,
arXiv 1805.09501. A policy is a list of sub-policies; each image gets one sub-policy drawn uniformly, and each
of its two operations is applied with its probability at its magnitude level.

Policies (tables of facts, written out here):

- ``"imagenet"``: the 25 sub-policies the paper reports for ImageNet (appendix, "policy found on reduced
  ImageNet"); some sub-policies appear twice, as in the paper.
- ``"efficientnet-v0"``: the ImageNet policy ``policy_v0`` of the official TPU EfficientNet code
  (tensorflow/tpu, ``models/official/efficientnet/autoaugment.py``), which EfficientNet (arXiv 1905.11946)
  trained with. It differs from the paper's table and uses ``SolarizeAdd``, an operation the paper lacks.

Magnitudes. A level ``m`` in 0..10 (the official code's ``_MAX_LEVEL = 10``) maps linearly onto the range the
paper's Table 1 gives for each operation, ``low + (high - low) * m / 10``:

============  ===================  ==========================================================
operation     range                meaning
============  ===================  ==========================================================
ShearX/Y      [-0.3, 0.3]          shear factor, sign drawn with probability 1/2
TranslateX/Y  [-150, 150] px       at 331 px in the paper: a fraction 150/331 of the image side
Rotate        [-30, 30] degrees    sign drawn with probability 1/2
Solarize      [0, 256]             threshold: pixels at or above it are inverted (256: no change)
Posterize     [4, 8]               bits kept per channel
Color,        [0.1, 1.9]           PIL ``ImageEnhance`` factor (1.0: no change)
Contrast,
Brightness,
Sharpness
SolarizeAdd   [0, 110]             added to pixels below 128 (official EfficientNet code only)
AutoContrast, (none)               the level is ignored
Equalize,
Invert
============  ===================  ==========================================================

Where implementations disagree, this follows the paper's ranges literally: the official TPU code maps
Posterize to 0..4 bits, and some re-implementations reverse Solarize and Posterize so that a higher level is
always stronger; neither is done here. Geometric operations fill uncovered pixels with gray (128, 128, 128), as
the official code does, and resample with nearest neighbour.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from PIL import Image, ImageEnhance, ImageOps

MAX_LEVEL = 10
FILL = (128, 128, 128)

Operation = tuple[str, float, int]  # (name, probability, magnitude level)
SubPolicy = tuple[Operation, ...]

IMAGENET_POLICY: tuple[SubPolicy, ...] = (
    (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
    (("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)),
    (("Equalize", 0.8, 8), ("Equalize", 0.6, 3)),
    (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
    (("Equalize", 0.4, 7), ("Solarize", 0.2, 4)),
    (("Equalize", 0.4, 4), ("Rotate", 0.8, 8)),
    (("Solarize", 0.6, 3), ("Equalize", 0.6, 7)),
    (("Posterize", 0.8, 5), ("Equalize", 1.0, 2)),
    (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
    (("Equalize", 0.6, 8), ("Posterize", 0.4, 6)),
    (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
    (("Rotate", 0.4, 9), ("Equalize", 0.6, 2)),
    (("Equalize", 0.0, 7), ("Equalize", 0.8, 8)),
    (("Invert", 0.6, 4), ("Equalize", 1.0, 8)),
    (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
    (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
    (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
    (("Sharpness", 0.4, 7), ("Invert", 0.6, 8)),
    (("ShearX", 0.6, 5), ("Equalize", 1.0, 9)),
    (("Color", 0.4, 0), ("Equalize", 0.6, 3)),
    (("Equalize", 0.4, 7), ("Solarize", 0.2, 4)),
    (("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)),
    (("Invert", 0.6, 4), ("Equalize", 1.0, 8)),
    (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
    (("Equalize", 0.8, 8), ("Equalize", 0.6, 3)),
)

EFFICIENTNET_V0_POLICY: tuple[SubPolicy, ...] = (
    (("Equalize", 0.8, 1), ("ShearY", 0.8, 4)),
    (("Color", 0.4, 9), ("Equalize", 0.6, 3)),
    (("Color", 0.4, 1), ("Rotate", 0.6, 8)),
    (("Solarize", 0.8, 3), ("Equalize", 0.4, 7)),
    (("Solarize", 0.4, 2), ("Solarize", 0.6, 2)),
    (("Color", 0.2, 0), ("Equalize", 0.8, 8)),
    (("Equalize", 0.4, 8), ("SolarizeAdd", 0.8, 3)),
    (("ShearX", 0.2, 9), ("Rotate", 0.6, 8)),
    (("Color", 0.6, 1), ("Equalize", 1.0, 2)),
    (("Invert", 0.4, 9), ("Rotate", 0.6, 0)),
    (("Equalize", 1.0, 9), ("ShearY", 0.6, 3)),
    (("Color", 0.4, 7), ("Equalize", 0.6, 0)),
    (("Posterize", 0.4, 6), ("AutoContrast", 0.4, 7)),
    (("Solarize", 0.6, 8), ("Color", 0.6, 9)),
    (("Solarize", 0.2, 4), ("Rotate", 0.8, 9)),
    (("Rotate", 1.0, 7), ("TranslateY", 0.8, 9)),
    (("ShearX", 0.0, 0), ("Solarize", 0.8, 4)),
    (("ShearY", 0.8, 0), ("Color", 0.6, 4)),
    (("Color", 1.0, 0), ("Rotate", 0.6, 2)),
    (("Equalize", 0.8, 4), ("Equalize", 0.0, 8)),
    (("Equalize", 1.0, 4), ("AutoContrast", 0.6, 2)),
    (("ShearY", 0.4, 7), ("SolarizeAdd", 0.6, 7)),
    (("Posterize", 0.8, 2), ("Solarize", 0.6, 10)),
    (("Solarize", 0.6, 8), ("Equalize", 0.6, 1)),
    (("Color", 0.8, 6), ("Rotate", 0.4, 5)),
)

POLICIES: dict[str, tuple[SubPolicy, ...]] = {
    "imagenet": IMAGENET_POLICY,
    "efficientnet-v0": EFFICIENTNET_V0_POLICY,
}


def _scaled(level: float, low: float, high: float) -> float:
    return low + (high - low) * level / MAX_LEVEL


def _signed(value: float, rng: random.Random) -> float:
    return -value if rng.random() < 0.5 else value


def _affine(img: Image.Image, matrix: tuple[float, ...], fill: tuple[int, ...]) -> Image.Image:
    # PIL's AFFINE data maps each output pixel (x, y) to the input pixel (a x + b y + c, d x + e y + f).
    return img.transform(img.size, Image.Transform.AFFINE, matrix, Image.Resampling.NEAREST, fillcolor=fill)


def shear_x(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    return _affine(img, (1, _signed(_scaled(level, 0, 0.3), rng), 0, 0, 1, 0), fill)


def shear_y(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    return _affine(img, (1, 0, 0, _signed(_scaled(level, 0, 0.3), rng), 1, 0), fill)


def translate_x(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    pixels = _signed(_scaled(level, 0, 150 / 331) * img.width, rng)
    return _affine(img, (1, 0, pixels, 0, 1, 0), fill)


def translate_y(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    pixels = _signed(_scaled(level, 0, 150 / 331) * img.height, rng)
    return _affine(img, (1, 0, 0, 0, 1, pixels), fill)


def rotate(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    degrees = _signed(_scaled(level, 0, 30), rng)
    return img.rotate(degrees, resample=Image.Resampling.NEAREST, fillcolor=fill)


def solarize(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    return ImageOps.solarize(img, int(_scaled(level, 0, 256)))


def solarize_add(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    added = int(_scaled(level, 0, 110))
    lut = [min(255, value + added) if value < 128 else value for value in range(256)]
    return img.point(lut * len(img.getbands()))


def posterize(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    return ImageOps.posterize(img, int(_scaled(level, 4, 8)))


def _enhance(enhancer: type) -> Callable[..., Image.Image]:
    def apply(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
        return enhancer(img).enhance(_scaled(level, 0.1, 1.9))

    apply.__name__ = enhancer.__name__.lower()
    return apply


def _levelless(op: Callable[[Image.Image], Image.Image]) -> Callable[..., Image.Image]:
    def apply(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
        return op(img)

    apply.__name__ = op.__name__
    return apply


OPS: dict[str, Callable[[Image.Image, float, random.Random, tuple[int, ...]], Image.Image]] = {
    "ShearX": shear_x,
    "ShearY": shear_y,
    "TranslateX": translate_x,
    "TranslateY": translate_y,
    "Rotate": rotate,
    "AutoContrast": _levelless(ImageOps.autocontrast),
    "Invert": _levelless(ImageOps.invert),
    "Equalize": _levelless(ImageOps.equalize),
    "Solarize": solarize,
    "SolarizeAdd": solarize_add,
    "Posterize": posterize,
    "Contrast": _enhance(ImageEnhance.Contrast),
    "Color": _enhance(ImageEnhance.Color),
    "Brightness": _enhance(ImageEnhance.Brightness),
    "Sharpness": _enhance(ImageEnhance.Sharpness),
}


def apply_op(
    img: Image.Image, name: str, level: float, rng: random.Random | None = None, fill: tuple[int, ...] = FILL
) -> Image.Image:
    """Apply the operation ``name`` at magnitude ``level`` (0..10) to an RGB image; the size is kept."""
    if name not in OPS:
        raise ValueError(f"unknown AutoAugment operation {name!r}; known: {', '.join(OPS)}")
    return OPS[name](img, level, rng or random, fill)  # type: ignore[arg-type]


class AutoAugment:
    """Draw one sub-policy per image and apply its operations, each with its probability.

    ``policy`` is a name in :data:`POLICIES` or a sequence of sub-policies ``((name, probability, level), ...)``.
    ``rng`` defaults to the ``random`` module, which PyTorch seeds differently in every data-loader worker.
    """

    def __init__(
        self,
        policy: str | Sequence[SubPolicy] = "imagenet",
        fill: tuple[int, ...] = FILL,
        rng: random.Random | None = None,
    ) -> None:
        if isinstance(policy, str):
            if policy not in POLICIES:
                raise ValueError(f"unknown AutoAugment policy {policy!r}; known: {', '.join(POLICIES)}")
            policy = POLICIES[policy]
        unknown = sorted({name for sub in policy for name, _, _ in sub if name not in OPS})
        if unknown or not policy:
            raise ValueError(f"AutoAugment policy is empty or names unknown operations: {unknown}")
        self.policy = tuple(tuple(sub) for sub in policy)
        self.fill = tuple(fill)
        self.rng = rng

    def __call__(self, img: Image.Image) -> Image.Image:
        rng = self.rng or random
        for name, probability, level in self.policy[rng.randrange(len(self.policy))]:
            if rng.random() < probability:
                img = OPS[name](img, level, rng, self.fill)
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.policy)} sub-policies, fill={self.fill})"
