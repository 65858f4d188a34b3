"""RandAugment: augmentation without a policy search, applied to PIL images (RGB or grey).

Cubuk, Zoph, Shlens & Le, "RandAugment: Practical automated data augmentation with a reduced search space",
arXiv 1909.13719: each image gets ``N`` operations drawn uniformly from a fixed list of PIL transformations, each
at a magnitude ``M``. The operations and their magnitude ranges are AutoAugment's
(:mod:`tasks.imagenet.autoaugment`, levels 0..10 mapped linearly onto the ranges of its Table 1), plus ``Cutout``.

UDA's version (Xie et al., arXiv 1904.12848v6, Appendix A.2, "RandAugment Details"): each image gets a sub-policy of
two operations; each operation is drawn from 15 transformations (:data:`UDA_OPS`: Invert, Cutout, Sharpness,
AutoContrast, Posterize, ShearX, TranslateX, TranslateY, ShearY, Rotate, Equalize, Contrast, Color, Solarize,
Brightness), its magnitude drawn uniformly from [1, 10), and it is applied with probability 0.5. That is
:class:`RandAugment` with its defaults; ``RandAugment(num_ops=N, magnitude=M, probability=1.0, ops=CUBUK_OPS)``
is the paper of Cubuk et al. as printed (its 14 operations, identity included, at one fixed magnitude).

``Cutout`` (DeVries & Taylor, arXiv 1708.04552) fills a square of gray centred on a uniformly drawn pixel (clipped at
the border); its side at level ``m`` is ``m / 10`` of half the image's shorter side, so the strongest is the 16 px
square of 32 px CIFAR images that Cutout's paper used. That mapping is this module's choice: neither paper prints
one. Grey (``L``) images are filled with gray 128; the other operations are AutoAugment's unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from PIL import Image, ImageDraw

from tasks.imagenet.autoaugment import FILL, MAX_LEVEL, OPS

UDA_OPS: tuple[str, ...] = (
    "Invert", "Cutout", "Sharpness", "AutoContrast", "Posterize", "ShearX", "TranslateX", "TranslateY", "ShearY",
    "Rotate", "Equalize", "Contrast", "Color", "Solarize", "Brightness",
)  # fmt: skip
CUBUK_OPS: tuple[str, ...] = (
    "Identity", "AutoContrast", "Equalize", "Rotate", "Solarize", "Color", "Posterize", "Contrast", "Brightness",
    "Sharpness", "ShearX", "ShearY", "TranslateX", "TranslateY",
)  # fmt: skip


def cutout(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    """A gray square of side ``level / 10 * min(w, h) / 2`` centred on a random pixel (clipped at the border)."""
    side = round(level / MAX_LEVEL * min(img.size) / 2)
    if side < 1:
        return img
    x, y = rng.randrange(img.width), rng.randrange(img.height)
    box = (max(0, x - side // 2), max(0, y - side // 2), min(img.width, x - side // 2 + side) - 1,
           min(img.height, y - side // 2 + side) - 1)  # fmt: skip
    out = img.copy()
    ImageDraw.Draw(out).rectangle(box, fill=fill[0] if img.mode == "L" else fill)
    return out


def identity(img: Image.Image, level: float, rng: random.Random, fill: tuple[int, ...]) -> Image.Image:
    return img


RANDAUGMENT_OPS = {**OPS, "Cutout": cutout, "Identity": identity}


class RandAugment:
    """Apply ``num_ops`` operations drawn uniformly (with replacement) from ``ops``, each with ``probability``.

    ``magnitude``: a fixed level in 0..10, or ``None`` to draw each operation's level uniformly from
    ``magnitude_range`` (UDA: [1, 10)). ``rng`` defaults to the ``random`` module, which PyTorch seeds differently
    in every data-loader worker.
    """

    def __init__(
        self,
        num_ops: int = 2,
        magnitude: float | None = None,
        probability: float = 0.5,
        ops: Sequence[str] = UDA_OPS,
        magnitude_range: tuple[float, float] = (1.0, 10.0),
        fill: tuple[int, ...] = FILL,
        rng: random.Random | None = None,
    ) -> None:
        unknown = sorted(set(ops) - set(RANDAUGMENT_OPS))
        if unknown or not ops:
            raise ValueError(
                f"RandAugment: no operations, or unknown ones: {unknown}; known: {', '.join(RANDAUGMENT_OPS)}"
            )
        if magnitude is not None and not 0 <= magnitude <= MAX_LEVEL:
            raise ValueError(f"RandAugment: magnitude must lie in 0..{MAX_LEVEL}; got {magnitude}")
        if num_ops < 0 or not 0 <= probability <= 1:
            raise ValueError(f"RandAugment: need num_ops >= 0 and probability in [0, 1]; got {num_ops}, {probability}")
        self.num_ops, self.magnitude, self.probability = num_ops, magnitude, probability
        self.ops, self.magnitude_range = tuple(ops), magnitude_range
        self.fill, self.rng = tuple(fill), rng

    def sample(self, rng: random.Random) -> list[tuple[str, float, float]]:
        """One sub-policy: ``num_ops`` triples ``(operation, probability, level)``."""
        low, high = self.magnitude_range
        return [
            (
                rng.choice(self.ops),
                self.probability,
                self.magnitude if self.magnitude is not None else rng.uniform(low, high),
            )
            for _ in range(self.num_ops)
        ]

    def __call__(self, img: Image.Image) -> Image.Image:
        rng = self.rng or random
        fill = self.fill[:1] if img.mode == "L" else self.fill
        for name, probability, level in self.sample(rng):
            if rng.random() < probability:
                img = RANDAUGMENT_OPS[name](img, level, rng, fill)
        return img

    def __repr__(self) -> str:
        magnitude = "uniform" if self.magnitude is None else self.magnitude
        name, ops = type(self).__name__, len(self.ops)
        return f"{name}(num_ops={self.num_ops}, magnitude={magnitude}, p={self.probability}, {ops} ops)"
