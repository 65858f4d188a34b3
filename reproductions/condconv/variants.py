"""CondConv's model variants as data, importable without torch (the plugin registration reads them).

EfficientNet-CondConv rows are ``efficientnet_condconv_builder.efficientnet_condconv_params`` of the authors' release
(tensorflow/tpu, models/official/efficientnet/condconv): (width, depth, resolution, dropout, experts); CondConv
replaces the convolutions of the blocks marked ``_cc`` there, i.e. EfficientNet-B0's last three stages (MBConv6 k5
112, k5 192 and k3 320 channels: 8 of the 16 blocks). MobileNetV1 rows are (width multiplier, experts, CondConv
layers); see model.py for which layers and why that choice is ours.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EfficientNetCC:
    """An EfficientNet-B0-based model: depth multiplier, dropout and experts (0 = the plain baseline)."""

    depth: float
    dropout: float
    experts: int
    resolution: int = 224
    first_condconv_stage: int = 4  # 0-based: stages 5, 6 and 7 of EfficientNet's Table 1 ("_cc" in the release)


@dataclass(frozen=True)
class MobileNetV1CC:
    """MobileNetV1 at a width multiplier with CondConv in its last ``condconv_layers`` separable layers and its
    classifier (``experts = 0``: the plain baseline)."""

    width: float
    experts: int
    condconv_layers: int = 6
    resolution: int = 224


EFFICIENTNET_VARIANTS: dict[str, EfficientNetCC] = {
    "efficientnet-condconv-b0-4e": EfficientNetCC(depth=1.0, dropout=0.25, experts=4),
    "efficientnet-condconv-b0-8e": EfficientNetCC(depth=1.0, dropout=0.25, experts=8),
    "efficientnet-condconv-b0-8e-depth": EfficientNetCC(depth=1.1, dropout=0.25, experts=8),
    "condconv-baseline-efficientnet-b0": EfficientNetCC(depth=1.0, dropout=0.2, experts=0),
}

MOBILENETV1_VARIANTS: dict[str, MobileNetV1CC] = {
    **{f"condconv-baseline-mobilenetv1-{w}": MobileNetV1CC(float(w), 0) for w in ("0.25", "0.5", "0.75", "1.0")},
    **{f"condconv-mobilenetv1-{w}-8e": MobileNetV1CC(float(w), 8) for w in ("0.25", "0.5", "0.75", "1.0")},
}
