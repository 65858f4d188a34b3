"""Block tables of the shared backbones, as data (importable without torch, so registries can read them).

``RESNETS`` are the block tables of He et al., "Deep Residual Learning for Image Recognition" (arXiv 1512.03385,
Table 1): basic blocks for ResNet-18/34, bottlenecks for ResNet-50/101/152, stages conv2_x..conv5_x at 56, 28, 14
and 7 px for a 224 px input. Built by :mod:`nets.resnet`; used by Attention Augmentation, NAS-FPN, Selfie, CondConv.

``MOBILENETV2_ROWS`` is Table 2 of Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks"
(arXiv 1801.04381) as ``(t, c, n, s)`` rows: expansion, output channels, repeats, stride of the first block. Built
by :mod:`nets.mobilenetv2`; used by NAS-FPNLite's backbone and CondConv's MobileNetV2.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResNetSpec:
    """Block type and blocks per stage (conv2_x .. conv5_x)."""

    block: str  # "basic" or "bottleneck"
    layers: tuple[int, int, int, int]


RESNETS: dict[int, ResNetSpec] = {
    18: ResNetSpec("basic", (2, 2, 2, 2)),
    34: ResNetSpec("basic", (3, 4, 6, 3)),
    50: ResNetSpec("bottleneck", (3, 4, 6, 3)),
    101: ResNetSpec("bottleneck", (3, 4, 23, 3)),
    152: ResNetSpec("bottleneck", (3, 8, 36, 3)),
}

# (t, c, n, s): Table 2 of arXiv 1801.04381.
MOBILENETV2_ROWS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
