"""MnasNet's mobile inverted bottleneck (MBConv) and the network of them that EfficientNet scales, shared by
EfficientNet (arXiv 1905.11946) and EfficientNet-CondConv (CondConv, arXiv 1904.04971).

The block is MnasNet's (Tan et al., "MnasNet: Platform-Aware Neural Architecture Search for Mobile", arXiv
1807.11626): MobileNetV2's inverted residual with a squeeze-excitation. Layer order, rounding and initialisation follow
the TPU code both papers were trained with (tensorflow/tpu, models/official/efficientnet: ``efficientnet_model.py``,
``MBConvBlock``, ``round_filters``, ``round_repeats``, ``Model``):

- MBConv = [1x1 expand conv, BN, swish] (skipped when the expand ratio is 1) -> kxk depthwise conv, BN, swish ->
  squeeze-excitation (global mean, 1x1 conv to ``int(0.25 * block INPUT channels)``, swish, 1x1 conv, sigmoid gate)
  -> 1x1 project conv, BN (no activation) -> drop-connect + identity skip when stride 1 and in == out channels.
- Network: 3x3 conv stride 2 to 32 channels (width-scaled); the stage table (:data:`B0_STAGES`, EfficientNet-B0's
  Table 1 of arXiv 1905.11946) scaled by width and depth; 1x1 head conv to 1280 (width-scaled), BN, swish, global
  average pool, dropout, fully connected classifier.
- BatchNorm with TF momentum 0.99 (PyTorch ``momentum=0.01``) and epsilon 1e-3.
- Stochastic depth ("drop connect"): block ``i`` of ``n`` survives with probability ``1 - 0.2 * i / n`` (official
  ``survival_prob`` 0.8 scaled by block index / block count).
- Initialisation: conv kernels N(0, 2 / fan_out) with fan_out = k*k*out/groups (TF counts a depthwise kernel's
  outputs per input channel), the classifier U(-1/sqrt(classes), 1/sqrt(classes)), zero biases.

Every conv pads symmetrically with ``k // 2`` (TF's 'SAME' pads stride-2 convs asymmetrically: same shapes, parameter
counts and multiply-adds; only the sampling grid of stride-2 layers shifts by one pixel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Stage:
    """One row of EfficientNet's Table 1: ``repeats`` MBConv blocks; the first strides and maps in -> out channels."""

    expand_ratio: int
    kernel: int
    stride: int
    repeats: int
    in_channels: int
    out_channels: int


# Table 1 of arXiv 1905.11946 (EfficientNet-B0), stages 2-8. Stage 1 is the stem conv, stage 9 the head.
B0_STAGES: tuple[Stage, ...] = (
    # Stage(expand, kernel, stride, repeats, in, out)  # operator, input resolution of the stage
    Stage(1, 3, 1, 1, 32, 16),  # MBConv1, k3x3   112 x 112
    Stage(6, 3, 2, 2, 16, 24),  # MBConv6, k3x3   112 x 112 -> 56
    Stage(6, 5, 2, 2, 24, 40),  # MBConv6, k5x5    56 x 56  -> 28
    Stage(6, 3, 2, 3, 40, 80),  # MBConv6, k3x3    28 x 28  -> 14
    Stage(6, 5, 1, 3, 80, 112),  # MBConv6, k5x5    14 x 14
    Stage(6, 5, 2, 4, 112, 192),  # MBConv6, k5x5    14 x 14  -> 7
    Stage(6, 3, 1, 1, 192, 320),  # MBConv6, k3x3     7 x 7
)
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280
SE_RATIO = 0.25  # of the block's input channels, as the official MBConvBlock
CHANNEL_DIVISOR = 8
BN_MOMENTUM = 0.01  # PyTorch convention: 1 - TF's 0.99
BN_EPS = 1e-3
SURVIVAL_PROB = 0.8


def round_filters(channels: int, width: float) -> int:
    """Scale a channel count by ``width``, round to a multiple of 8, never more than 10% below the scaled value."""
    scaled = channels * width
    rounded = max(CHANNEL_DIVISOR, int(scaled + CHANNEL_DIVISOR / 2) // CHANNEL_DIVISOR * CHANNEL_DIVISOR)
    if rounded < 0.9 * scaled:
        rounded += CHANNEL_DIVISOR
    return int(rounded)


def round_repeats(repeats: int, depth: float) -> int:
    """Scale a stage's block count by ``depth``, rounding up."""
    return int(math.ceil(depth * repeats))


class ConvBNAct(nn.Sequential):
    """kxk conv (no bias) -> BatchNorm -> optional swish; ``groups == channels`` makes it depthwise."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int,
        stride: int = 1,
        groups: int = 1,
        act: bool = True,
        bn_momentum: float = BN_MOMENTUM,
    ) -> None:
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel, stride, padding=kernel // 2, groups=groups, bias=False),
            nn.BatchNorm2d(out_channels, eps=BN_EPS, momentum=bn_momentum),
            nn.SiLU() if act else nn.Identity(),
        )


class SqueezeExcitation(nn.Module):
    """Channel gate: x * sigmoid(W2 swish(W1 mean_hw(x) + b1) + b2)."""

    def __init__(self, channels: int, reduced: int) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.expand = nn.Conv2d(reduced, channels, 1)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean(dim=(2, 3), keepdim=True)  # (N, C, 1, 1)
        s = self.expand(self.act(self.reduce(s)))  # (N, C/r, 1, 1) -> (N, C, 1, 1)
        return x * torch.sigmoid(s)  # (N, C, H, W)


def drop_connect(x: torch.Tensor, survival_prob: float, training: bool) -> torch.Tensor:
    """Stochastic depth: zero the whole residual branch of a sample with prob 1 - p, scale survivors by 1/p."""
    if not training or survival_prob >= 1.0:
        return x
    keep = torch.rand(x.shape[0], 1, 1, 1, device=x.device, dtype=x.dtype) < survival_prob  # (N, 1, 1, 1)
    return x * keep / survival_prob


class MBConv(nn.Module):
    """Mobile inverted bottleneck with squeeze-excitation (MnasNet / EfficientNet block)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        expand_ratio: int,
        kernel: int,
        stride: int,
        survival_prob: float = 1.0,
        bn_momentum: float = BN_MOMENTUM,
    ) -> None:
        super().__init__()
        hidden = in_channels * expand_ratio
        self.expand = ConvBNAct(in_channels, hidden, 1, bn_momentum=bn_momentum) if expand_ratio != 1 else nn.Identity()
        self.depthwise = ConvBNAct(hidden, hidden, kernel, stride, groups=hidden, bn_momentum=bn_momentum)
        self.se = SqueezeExcitation(hidden, max(1, int(in_channels * SE_RATIO)))
        self.project = ConvBNAct(hidden, out_channels, 1, act=False, bn_momentum=bn_momentum)
        self.has_skip = stride == 1 and in_channels == out_channels
        self.survival_prob = survival_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.expand(x)  # (N, C_in, H, W) -> (N, e*C_in, H, W)
        y = self.depthwise(y)  # -> (N, e*C_in, H/s, W/s)
        y = self.se(y)  # same shape, channels gated
        y = self.project(y)  # -> (N, C_out, H/s, W/s)
        if self.has_skip:
            y = drop_connect(y, self.survival_prob, self.training) + x
        return y


class MBConvNet(nn.Module):
    """Stem -> MBConv stages scaled by ``width`` and ``depth`` -> 1x1 head conv -> pool -> dropout -> classifier.

    EfficientNet-B0..B7 at their width and depth coefficients; the base network of EfficientNet-CondConv at width 1.
    """

    def __init__(
        self,
        width: float = 1.0,
        depth: float = 1.0,
        dropout: float = 0.2,
        num_classes: int = 1000,
        survival_prob: float = SURVIVAL_PROB,
        bn_momentum: float = BN_MOMENTUM,
        stages: tuple[Stage, ...] = B0_STAGES,
    ) -> None:
        super().__init__()
        stem = round_filters(STEM_CHANNELS, width)
        head = round_filters(HEAD_CHANNELS, width)
        self.stem = ConvBNAct(3, stem, 3, stride=2, bn_momentum=bn_momentum)
        self.blocks = nn.Sequential(*self._blocks(stages, width, depth, survival_prob, bn_momentum))
        self.head = ConvBNAct(self.blocks[-1].project[0].out_channels, head, 1, bn_momentum=bn_momentum)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(head, num_classes)
        self.reset_parameters()

    @staticmethod
    def _blocks(
        stages: tuple[Stage, ...], width: float, depth: float, survival_prob: float, bn_momentum: float
    ) -> list[MBConv]:
        rows = [(s, round_repeats(s.repeats, depth)) for s in stages]
        total = sum(repeats for _, repeats in rows)
        blocks: list[MBConv] = []
        for stage, repeats in rows:
            in_channels = round_filters(stage.in_channels, width)
            out_channels = round_filters(stage.out_channels, width)
            for r in range(repeats):
                # Only the first block of a stage strides and changes the channel count.
                keep = 1.0 - (1.0 - survival_prob) * len(blocks) / total
                blocks.append(
                    MBConv(
                        in_channels if r == 0 else out_channels,
                        out_channels,
                        stage.expand_ratio,
                        stage.kernel,
                        stage.stride if r == 0 else 1,
                        survival_prob=keep,
                        bn_momentum=bn_momentum,
                    )
                )
        return blocks

    def reset_parameters(self) -> None:
        """Official initialisation (efficientnet_model.conv_kernel_initializer / dense_kernel_initializer)."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels // m.groups
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                bound = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -bound, bound)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Shapes for B0 at 224 x 224.
        x = self.stem(x)  # (N, 3, 224, 224) -> (N, 32, 112, 112)
        x = self.blocks(x)  # -> (N, 320, 7, 7)
        x = self.head(x)  # -> (N, 1280, 7, 7)
        x = self.pool(x).flatten(1)  # -> (N, 1280)
        return self.classifier(self.dropout(x))  # -> (N, num_classes)
