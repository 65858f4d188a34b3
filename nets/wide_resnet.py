"""Wide residual networks, written from the definition: Zagoruyko & Komodakis, "Wide Residual Networks", BMVC 2016
(arXiv 1605.07146).

WRN-d-k: a 3x3 convolution to 16 channels, then three groups of ``n = (d - 4) / 6`` pre-activation basic blocks of
``16k``, ``32k`` and ``64k`` channels (the second and third groups start with stride 2), then batch norm, the
non-linearity, global average pooling and a linear classifier. A block is ``BN -> act -> conv3x3 -> BN -> act ->
(dropout) -> conv3x3`` plus the shortcut: the identity, or a 1x1 convolution where the width or stride changes
(the convolutions have no bias). Depth ``d`` counts the convolutions and the classifier: ``6n + 4``.

WRN-28-2 (n = 4, widths 32 / 64 / 128) is the semi-supervised benchmark network of Oliver et al. (arXiv 1804.09170)
that MixMatch and UDA use: about 1.5M parameters for 10 classes. Its leaky-ReLU slope (0.1) is the ``leaky``
argument; 0 gives the ReLU of the original paper. The parameter count does not depend on it.
"""

from __future__ import annotations

import torch
from torch import nn


def _act(leaky: float) -> nn.Module:
    return nn.LeakyReLU(leaky, inplace=False) if leaky else nn.ReLU(inplace=False)


class WideBasicBlock(nn.Module):
    """Pre-activation block ``(N, C_in, H, W) -> (N, C_out, H / stride, W / stride)``."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, leaky: float, dropout: float = 0.0) -> None:
        super().__init__()
        self.bn1, self.act1 = nn.BatchNorm2d(in_channels), _act(leaky)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn2, self.act2 = nn.BatchNorm2d(out_channels), _act(leaky)
        self.drop = nn.Dropout(dropout) if dropout else nn.Identity()
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        changes = in_channels != out_channels or stride != 1
        self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride, bias=False) if changes else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.act1(self.bn1(x))
        out = self.conv2(self.drop(self.act2(self.bn2(self.conv1(pre)))))
        return out + (x if self.shortcut is None else self.shortcut(pre))


class WideResNet(nn.Module):
    """WRN-``depth``-``widen`` for ``in_channels`` x H x W images (32 x 32 in the papers): logits ``(N, classes)``."""

    def __init__(
        self,
        depth: int = 28,
        widen: int = 2,
        num_classes: int = 10,
        in_channels: int = 3,
        leaky: float = 0.1,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if depth < 10 or (depth - 4) % 6:
            raise ValueError(f"a wide ResNet's depth is 6n + 4 with n >= 1 (10, 16, 22, 28, ...); got {depth}")
        blocks = (depth - 4) // 6
        widths = (16, 16 * widen, 32 * widen, 64 * widen)
        self.stem = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
        layers, channels = [], widths[0]
        for group, width in enumerate(widths[1:]):
            for index in range(blocks):
                stride = 2 if group > 0 and index == 0 else 1
                layers.append(WideBasicBlock(channels, width, stride, leaky, dropout))
                channels = width
        self.blocks = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.BatchNorm2d(channels), _act(leaky), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(channels, num_classes)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """He-normal (fan-out) convolutions, BN scale 1 and offset 0, Xavier-uniform classifier with zero bias."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="leaky_relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.xavier_uniform_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.head(self.blocks(self.stem(x))))  # (N, C, H, W) -> (N, num_classes)


def wide_resnet(
    depth: int = 28, widen: int = 2, num_classes: int = 10, in_channels: int = 3, leaky: float = 0.1
) -> WideResNet:
    """WRN-``depth``-``widen``; ``wide_resnet(28, 2)`` is WRN-28-2."""
    return WideResNet(depth, widen, num_classes, in_channels, leaky)


def parameter_count(depth: int, widen: int, num_classes: int, in_channels: int = 3) -> int:
    """The parameters of WRN-d-k counted from its configuration (no module built): convolutions, batch-norm
    scales and offsets, the 1x1 shortcuts and the classifier."""
    blocks = (depth - 4) // 6
    widths = (16, 16 * widen, 32 * widen, 64 * widen)
    total, channels = 9 * in_channels * widths[0], widths[0]
    for width in widths[1:]:
        for _ in range(blocks):
            total += 2 * channels + 9 * channels * width + 2 * width + 9 * width * width
            total += channels * width if channels != width else 0  # the 1x1 shortcut (stride-2 blocks widen too)
            channels = width
    return total + 2 * channels + channels * num_classes + num_classes
