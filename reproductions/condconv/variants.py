"""CondConv's model variants as data, importable without torch (the plugin registration reads them).

EfficientNet-CondConv rows are ``efficientnet_condconv_builder.efficientnet_condconv_params`` of the authors' release
(tensorflow/tpu, models/official/efficientnet/condconv): (width, depth, resolution, dropout, experts); CondConv
replaces the convolutions of the blocks marked ``_cc`` there, i.e. EfficientNet-B0's last three stages (MBConv6 k5
112, k5 192 and k3 320 channels: 8 of the 16 blocks). MobileNetV1 rows are (width multiplier, experts, CondConv
layers); see model.py for which layers and why that choice is ours.

MobileNetV2 / MnasNet-A1 rows are (family, experts, CondConv blocks, dropout) and ResNet-50 rows (experts, CondConv
stages): which layers become CondConv is this harness's reading (README, "Layer choices"), the paper's appendix text
could not be read. The budget rows are a small grey-scale MobileNetV1 for Fashion-MNIST: CondConv in its last two
separable layers and classifier against the same net made wider until its multiply-adds match (``width``).
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


@dataclass(frozen=True)
class InvertedResidualCC:
    """MobileNetV2 1.0 or MnasNet-A1 with CondConv in its last ``condconv_blocks`` blocks and classifier."""

    family: str  # "mobilenetv2" or "mnasnet-a1"
    experts: int
    condconv_blocks: int = 0
    dropout: float = 0.2
    resolution: int = 224


@dataclass(frozen=True)
class ResNetCC:
    """ResNet-``depth`` with CondConv in its last ``condconv_stages`` stages and classifier."""

    experts: int
    condconv_stages: int = 0
    depth: int = 50
    resolution: int = 224


@dataclass(frozen=True)
class BudgetNet:
    """The budget tier's small MobileNetV1 (width multiplier, experts, CondConv separable layers) on 28x28 grey."""

    width: float
    experts: int
    condconv_layers: int = 0
    resolution: int = 28


# MnasNet-A1 (arXiv 1807.11626, Figure 7; tensorflow/tpu models/official/mnasnet/mnasnet_models.py ``mnasnet_a1``):
# (expansion, channels, repeats, stride, kernel, squeeze-excite ratio of the block input).
MNASNET_A1_ROWS: tuple[tuple[int, int, int, int, int, float], ...] = (
    (1, 16, 1, 1, 3, 0.0),
    (6, 24, 2, 2, 3, 0.0),
    (3, 40, 3, 2, 5, 0.25),
    (6, 80, 4, 2, 3, 0.0),
    (6, 112, 2, 1, 3, 0.25),
    (6, 160, 3, 2, 5, 0.25),
    (6, 320, 1, 1, 3, 0.0),
)

INVERTED_RESIDUAL_VARIANTS: dict[str, InvertedResidualCC] = {
    "condconv-baseline-mobilenetv2-1.0": InvertedResidualCC("mobilenetv2", 0),
    "condconv-mobilenetv2-1.0-8e": InvertedResidualCC("mobilenetv2", 8, condconv_blocks=7),
    "condconv-baseline-mnasnet-a1": InvertedResidualCC("mnasnet-a1", 0),
    "condconv-mnasnet-a1-8e": InvertedResidualCC("mnasnet-a1", 8, condconv_blocks=6),
}

RESNET_VARIANTS: dict[str, ResNetCC] = {
    "condconv-baseline-resnet-50": ResNetCC(0),
    "condconv-resnet-50-8e": ResNetCC(8, condconv_stages=1),
}

# (output channels, stride) of the budget net's separable layers after a 3x3/1 stem of 16 channels: 28 -> 14 -> 7 px.
BUDGET_LAYERS: tuple[tuple[int, int], ...] = ((32, 2), (32, 1), (64, 2), (64, 1), (64, 1))
BUDGET_STEM = 16
BUDGET_VARIANTS: dict[str, BudgetNet] = {
    "condconv-budget-mnv1-8e": BudgetNet(1.0, 8, condconv_layers=2),
    "condconv-budget-mnv1-static-matched": BudgetNet(1.07, 0),
}

ALL_VARIANTS: dict[str, object] = {
    **EFFICIENTNET_VARIANTS,
    **MOBILENETV1_VARIANTS,
    **INVERTED_RESIDUAL_VARIANTS,
    **RESNET_VARIANTS,
    **BUDGET_VARIANTS,
}
