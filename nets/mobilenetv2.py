"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", arXiv 1801.04381),
the mobile detection backbone of NAS-FPNLite.

Table 2 of that paper as ``(t, c, n, s)`` rows (:data:`nets.specs.MOBILENETV2_ROWS`: expansion, output channels,
repeats, stride of the first), a 3x3/2 stem to 32 channels and a 1x1 head to 1280 channels, ReLU6, BatchNorm after
every convolution.
:meth:`MobileNetV2.features` returns the feature maps at strides 8, 16 and 32 used as C3, C4, C5: the output of
the last 32-channel block, of the last 96-channel block, and of the 1x1 head conv (1280 channels), the
end points SSDLite and the TF detection code take from MobileNetV2.
"""

from __future__ import annotations

import torch
from torch import nn

from nets.specs import MOBILENETV2_ROWS

STEM, HEAD = 32, 1280
C3_ROW, C4_ROW = 2, 4  # rows whose last block ends at stride 8 (32 ch) and stride 16 (96 ch)


def conv_bn_relu6(in_channels: int, out_channels: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU6(inplace=True),
    )


class InvertedResidual(nn.Module):
    """1x1 expand (ReLU6) -> 3x3 depthwise (ReLU6) -> 1x1 linear projection, identity skip when shapes match."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, expansion: int) -> None:
        super().__init__()
        hidden = in_channels * expansion
        layers = [conv_bn_relu6(in_channels, hidden, 1)] if expansion != 1 else []
        layers += [
            conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
            nn.Conv2d(hidden, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
        ]
        self.block = nn.Sequential(*layers)
        self.skip = stride == 1 and in_channels == out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.skip else y


class MobileNetV2(nn.Module):
    """MobileNetV2 1.0 as a detection backbone (no classifier)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn_relu6(3, STEM, 3, 2)
        rows, in_channels = [], STEM
        for t, c, n, s in MOBILENETV2_ROWS:
            blocks = [InvertedResidual(in_channels if i == 0 else c, c, s if i == 0 else 1, t) for i in range(n)]
            rows.append(nn.Sequential(*blocks))
            in_channels = c
        self.rows = nn.ModuleList(rows)
        self.head = conv_bn_relu6(in_channels, HEAD, 1)
        self.out_channels = (MOBILENETV2_ROWS[C3_ROW][1], MOBILENETV2_ROWS[C4_ROW][1], HEAD)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """C3, C4, C5 at strides 8, 16, 32: (N, 32, H/8, W/8), (N, 96, H/16, W/16), (N, 1280, H/32, W/32)."""
        x = self.stem(x)
        outputs = []
        for index, row in enumerate(self.rows):
            x = row(x)
            if index in (C3_ROW, C4_ROW):
                outputs.append(x)
        outputs.append(self.head(x))
        return outputs
