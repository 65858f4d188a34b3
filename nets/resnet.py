"""ResNet (He et al., "Deep Residual Learning for Image Recognition", arXiv 1512.03385), shared by the
attention-augmented ResNets, the RetinaNet backbones of NAS-FPN and Attention Augmentation, Selfie's ResNets and
CondConv's ResNet-50. Block tables: :data:`nets.specs.RESNETS`.

The layout is the one of the authors' TPU code (tensorflow/tpu models/official/resnet, ``resnet_model.py``),
which the Google papers built on: "v1.5" bottlenecks that stride in the 3x3 convolution, a 1x1 projection
shortcut (with BatchNorm) where the shape changes, BatchNorm after every convolution, the last BatchNorm of each
residual branch initialised to zero (``init_zero``), convolutions without bias, He-normal (fan-out) init.

``spatial_conv`` builds the first spatial convolution of every block (the 3x3 conv of a bottleneck, the first
3x3 conv of a basic block): the hook through which attention augmentation replaces it. It is called as
``spatial_conv(in_channels, out_channels, stride, stage)`` with ``stage`` 0..3 for conv2_x..conv5_x and returns an
``nn.Module`` mapping ``(N, in, H, W)`` to ``(N, out, H/stride, W/stride)``.

``stem="imagenet"`` is the 7x7/2 conv + 3x3/2 max pool of the paper (224 px -> 56 px at conv2_x);
``stem="cifar"`` is a 3x3/1 conv without pooling, the usual adaptation to 32 px images; ``in_channels=1`` takes
grayscale images (the budget tier's Fashion-MNIST).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from nets.specs import RESNETS, ResNetSpec

SpatialConv = Callable[[int, int, int, int], nn.Module]
STAGE_WIDTHS = (64, 128, 256, 512)
BOTTLENECK_EXPANSION = 4


def conv3x3(in_channels: int, out_channels: int, stride: int = 1, stage: int = 0) -> nn.Conv2d:
    """The plain spatial convolution (``stage`` is accepted so it fits the ``spatial_conv`` hook)."""
    return nn.Conv2d(in_channels, out_channels, 3, stride, padding=1, bias=False)


def conv_bn(in_channels: int, out_channels: int, kernel: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride, padding=kernel // 2, bias=False),
        nn.BatchNorm2d(out_channels),
    )


class BasicBlock(nn.Module):
    """3x3 conv -> BN -> ReLU -> 3x3 conv -> BN (zero-init), plus the shortcut, then ReLU."""

    expansion = 1

    def __init__(self, in_channels: int, width: int, stride: int, stage: int, spatial_conv: SpatialConv) -> None:
        super().__init__()
        self.conv1 = spatial_conv(in_channels, width, stride, stage)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width)
        self.bn2 = nn.BatchNorm2d(width)
        self.bn2.zero_init = True
        self.shortcut = conv_bn(in_channels, width, 1, stride) if stride != 1 or in_channels != width else None
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.shortcut is None else self.shortcut(x)
        y = self.relu(self.bn1(self.conv1(x)))  # (N, C_in, H, W) -> (N, width, H/s, W/s)
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class Bottleneck(nn.Module):
    """1x1 reduce -> 3x3 (strided) -> 1x1 expand (x4, zero-init BN), plus the shortcut, then ReLU."""

    expansion = BOTTLENECK_EXPANSION

    def __init__(self, in_channels: int, width: int, stride: int, stage: int, spatial_conv: SpatialConv) -> None:
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = spatial_conv(width, width, stride, stage)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.bn3.zero_init = True
        needs_projection = stride != 1 or in_channels != out_channels
        self.shortcut = conv_bn(in_channels, out_channels, 1, stride) if needs_projection else None
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.shortcut is None else self.shortcut(x)
        y = self.relu(self.bn1(self.conv1(x)))  # (N, C_in, H, W) -> (N, w, H, W)
        y = self.relu(self.bn2(self.conv2(y)))  # -> (N, w, H/s, W/s)
        y = self.bn3(self.conv3(y))  # -> (N, 4w, H/s, W/s)
        return self.relu(y + identity)


BLOCKS = {"basic": BasicBlock, "bottleneck": Bottleneck}


class ResNet(nn.Module):
    """Stem -> conv2_x..conv5_x -> global average pool -> fully connected classifier.

    ``num_classes=0`` leaves out the classifier (a detection backbone). :meth:`features` returns the outputs of
    the stages, C2..C5 at strides 4, 8, 16, 32 for the ImageNet stem.
    """

    def __init__(
        self,
        spec: ResNetSpec,
        num_classes: int = 1000,
        spatial_conv: SpatialConv = conv3x3,
        stem: str = "imagenet",
        width: int = 64,
        in_channels: int = 3,
    ) -> None:
        super().__init__()
        if stem not in ("imagenet", "cifar"):
            raise ValueError(f"unknown stem {stem!r}; use 'imagenet' or 'cifar'")
        block = BLOCKS[spec.block]
        if stem == "imagenet":
            stem_conv = conv_bn(in_channels, width, 7, 2)
            self.stem = nn.Sequential(stem_conv, nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, padding=1))
        else:
            self.stem = nn.Sequential(conv_bn(in_channels, width, 3, 1), nn.ReLU(inplace=True))
        stages, in_channels = [], width
        for stage, repeats in enumerate(spec.layers):
            stage_width = width * STAGE_WIDTHS[stage] // STAGE_WIDTHS[0]
            blocks = []
            for index in range(repeats):
                stride = 2 if stage > 0 and index == 0 else 1
                blocks.append(block(in_channels, stage_width, stride, stage, spatial_conv))
                in_channels = stage_width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.ModuleList(stages)
        self.out_channels = tuple(width * w // STAGE_WIDTHS[0] * block.expansion for w in STAGE_WIDTHS)
        self.fc = nn.Linear(in_channels, num_classes) if num_classes else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """He-normal (fan-out) conv kernels, BN gamma 1 (0 for each branch's last BN), classifier N(0, 0.01)."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 0.0 if getattr(m, "zero_init", False) else 1.0)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.01)
                nn.init.zeros_(m.bias)

    def features(self, x: torch.Tensor, stages: int = 4) -> list[torch.Tensor]:
        """Outputs of the first ``stages`` stages (C2, C3, C4, C5 for the ImageNet stem)."""
        x = self.stem(x)  # (N, 3, 224, 224) -> (N, 64, 56, 56)
        outputs = []
        for stage in self.stages[:stages]:
            x = stage(x)
            outputs.append(x)
        return outputs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)[-1]  # (N, 2048, 7, 7) for ResNet-50 at 224 px
        x = x.mean(dim=(2, 3))  # global average pool -> (N, 2048)
        if self.fc is None:
            return x
        return self.fc(x)  # -> (N, num_classes)


def resnet(depth: int = 50, num_classes: int = 1000, stem: str = "imagenet", width: int = 64) -> ResNet:
    """Build the plain ResNet-``depth`` (18, 34, 50, 101, 152)."""
    if depth not in RESNETS:
        raise ValueError(f"unknown ResNet depth {depth}; known: {', '.join(map(str, RESNETS))}")
    return ResNet(RESNETS[depth], num_classes=num_classes, stem=stem, width=width)
