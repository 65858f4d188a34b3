"""EfficientNet's compound-scaling rows as data, importable without torch (the plugin registration reads them).

Rows are ``efficientnet_builder.efficientnet_params`` of the official code (tensorflow/tpu,
models/official/efficientnet): phi = 0..7 of Section 3.3 of arXiv 1905.11946v5, as rounded by the authors.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    """Compound-scaling row: width and depth multipliers, input resolution and classifier dropout."""

    width: float
    depth: float
    resolution: int
    dropout: float


# efficientnet_builder.efficientnet_params of the official code (phi = 0..7 of Section 3.3, rounded by the authors).
VARIANTS: dict[str, Variant] = {
    "b0": Variant(width=1.0, depth=1.0, resolution=224, dropout=0.2),
    "b1": Variant(width=1.0, depth=1.1, resolution=240, dropout=0.2),
    "b2": Variant(width=1.1, depth=1.2, resolution=260, dropout=0.3),
    "b3": Variant(width=1.2, depth=1.4, resolution=300, dropout=0.3),
    "b4": Variant(width=1.4, depth=1.8, resolution=380, dropout=0.4),
    "b5": Variant(width=1.6, depth=2.2, resolution=456, dropout=0.4),
    "b6": Variant(width=1.8, depth=2.6, resolution=528, dropout=0.5),
    "b7": Variant(width=2.0, depth=3.1, resolution=600, dropout=0.5),
}

CROP_PADDING = 32  # official eval: center crop res / (res + 32) of the shorter side, then resize to res


def eval_crop_fraction(resolution: int) -> float:
    """Fraction of the shorter image side kept by the official center crop (0.875 for B0 at 224)."""
    return resolution / (resolution + CROP_PADDING)
