"""CondConv: Conditionally Parameterized Convolutions for Efficient Inference (Yang et al., NeurIPS 2019),
arXiv 1904.04971v4.

A CondConv layer computes, per example, ``Output(x) = sigma((a_1 W_1 + ... + a_n W_n) * x)``: n expert kernels of the
original layer's shape, mixed with example-dependent routing weights ``a = r(x) = Sigmoid(GlobalAveragePool(x) R)``
(Section 3). The efficiency argument is that the kernel is mixed once per example and then applied as ONE convolution,
so the cost over the static layer is the routing (``C_in x n`` multiply-adds) plus the mixing (``n x |W|``), not n
convolutions. :class:`CondConv2d` does exactly that:

- mixing: ``routing (B, n) @ experts (n, |W|)`` as a matmul (so ``FlopCounterMode`` counts its ``B n |W|``
  multiply-adds), reshaped to ``B`` kernels;
- convolution: the batch folded into the channel axis, ``(1, B C_in, H, W)``, convolved with the ``B`` kernels
  stacked as ``(B C_out, C_in / g, k, k)`` and ``groups = B g``: one grouped conv whose cost per example is the
  static layer's. Depthwise CondConv is the same with ``g = C_in``.

Models, following the authors' release (tensorflow/tpu, models/official/efficientnet: ``condconv/condconv_layers.py``,
``condconv/efficientnet_condconv_builder.py``, ``efficientnet_model.MBConvBlock``):

- EfficientNet-CondConv-B0 (4 or 8 experts, and the "-depth" model at depth 1.1): EfficientNet-B0 whose last three
  stages use CondConv for the expansion, depthwise and projection convs of every block. One routing function per
  block (global average pool of the *block input* -> dense -> sigmoid) is shared by its three CondConv layers;
  squeeze-excite, BN, swish, drop-connect and the stem/head are EfficientNet-B0's (reused from
  :mod:`reproductions.efficientnet.model`); classifier dropout 0.25.
- MobileNetV1 (Howard et al. 2017, arXiv 1704.04861) at width 0.25-1.0, with CondConv in its last
  ``condconv_layers`` depthwise-separable layers (depthwise and pointwise share the layer's routing, computed from
  the layer input) and in the classifier. Which layers the paper converts could not be read for this reproduction
  (see README): the default, the last 6 separable layers and the classifier, is this harness's assumption.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from reproductions.condconv.variants import EFFICIENTNET_VARIANTS, MOBILENETV1_VARIANTS
from reproductions.efficientnet.model import (
    B0_STAGES,
    BN_EPS,
    BN_MOMENTUM,
    SE_RATIO,
    SURVIVAL_PROB,
    EfficientNet,
    SqueezeExcitation,
    drop_connect,
    round_filters,
    round_repeats,
)


class Routing(nn.Module):
    """r(x) = Sigmoid(GlobalAveragePool(x) R): (N, C, H, W) -> (N, num_experts) routing weights in (0, 1)."""

    def __init__(self, in_channels: int, num_experts: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_channels, num_experts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.fc(x.mean(dim=(2, 3))))


class CondConv2d(nn.Module):
    """A convolution whose kernel is ``sum_i routing[:, i] W_i``, applied as one grouped convolution over the batch."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int,
        num_experts: int,
        stride: int = 1,
        padding: int = 0,
        groups: int = 1,
        bias: bool = False,
    ) -> None:
        super().__init__()
        if num_experts < 1:
            raise ValueError("a CondConv layer needs at least one expert")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.stride, self.padding, self.num_experts = stride, padding, num_experts
        self.weight = nn.Parameter(torch.empty(num_experts, out_channels, in_channels // groups, kernel, kernel))
        self.bias = nn.Parameter(torch.zeros(num_experts, out_channels)) if bias else None
        for expert in self.weight:  # each expert initialised like the static layer (release get_condconv_initializer)
            nn.init.kaiming_normal_(expert, mode="fan_out")

    def mixed_kernels(self, routing: torch.Tensor) -> torch.Tensor:
        """(B, n) routing weights -> (B, C_out, C_in / g, k, k) per-example kernels, as one counted matmul."""
        kernels = routing @ self.weight.flatten(1)  # (B, n) @ (n, |W|) -> (B, |W|)
        return kernels.view(routing.shape[0], *self.weight.shape[1:])

    def forward(self, x: torch.Tensor, routing: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        kernels = self.mixed_kernels(routing).flatten(0, 1)  # (B C_out, C_in / g, k, k)
        y = F.conv2d(x.reshape(1, b * c, h, w), kernels, None, self.stride, self.padding, groups=b * self.groups)
        y = y.view(b, self.out_channels, *y.shape[-2:])  # (1, B C_out, H', W') -> (B, C_out, H', W')
        if self.bias is not None:
            y = y + (routing @ self.bias)[:, :, None, None]  # per-example bias, mixed the same way
        return y


class CondConvBNAct(nn.Module):
    """CondConv2d (no bias) -> BatchNorm -> optional activation; takes the routing weights as a second input."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int,
        num_experts: int,
        stride: int = 1,
        groups: int = 1,
        act: nn.Module | None = None,
        bn_momentum: float = BN_MOMENTUM,
    ) -> None:
        super().__init__()
        self.conv = CondConv2d(in_channels, out_channels, kernel, num_experts, stride, kernel // 2, groups)
        self.bn = nn.BatchNorm2d(out_channels, eps=BN_EPS, momentum=bn_momentum)
        self.act = act if act is not None else nn.Identity()

    def forward(self, x: torch.Tensor, routing: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x, routing)))


class CondMBConv(nn.Module):
    """EfficientNet's MBConv with CondConv expansion, depthwise and projection, sharing one routing per block."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        expand_ratio: int,
        kernel: int,
        stride: int,
        num_experts: int,
        survival_prob: float = 1.0,
    ) -> None:
        super().__init__()
        hidden = in_channels * expand_ratio
        self.routing = Routing(in_channels, num_experts)
        self.expand = CondConvBNAct(in_channels, hidden, 1, num_experts, act=nn.SiLU()) if expand_ratio != 1 else None
        self.depthwise = CondConvBNAct(hidden, hidden, kernel, num_experts, stride, groups=hidden, act=nn.SiLU())
        self.se = SqueezeExcitation(hidden, max(1, int(in_channels * SE_RATIO)))
        self.project = CondConvBNAct(hidden, out_channels, 1, num_experts)
        self.has_skip = stride == 1 and in_channels == out_channels
        self.survival_prob = survival_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = self.routing(x)  # (N, n) from the block input, shared by the three CondConv layers
        y = self.expand(x, r) if self.expand is not None else x  # (N, C_in, H, W) -> (N, e C_in, H, W)
        y = self.se(self.depthwise(y, r))  # -> (N, e C_in, H/s, W/s)
        y = self.project(y, r)  # -> (N, C_out, H/s, W/s)
        if self.has_skip:
            y = drop_connect(y, self.survival_prob, self.training) + x
        return y


def efficientnet_condconv(
    variant: str = "efficientnet-condconv-b0-8e", num_classes: int = 1000, dropout: float | None = None
) -> nn.Module:
    """Build an EfficientNet-CondConv model of :data:`EFFICIENTNET_VARIANTS` (``experts = 0``: plain B0)."""
    if variant not in EFFICIENTNET_VARIANTS:
        raise ValueError(
            f"unknown EfficientNet-CondConv variant {variant!r}; known: {', '.join(EFFICIENTNET_VARIANTS)}"
        )
    row = EFFICIENTNET_VARIANTS[variant]
    dropout = row.dropout if dropout is None else dropout
    model = EfficientNet(width=1.0, depth=row.depth, dropout=dropout, num_classes=num_classes)
    if row.experts:
        model.blocks = nn.Sequential(*_efficientnet_blocks(row.depth, row.experts, row.first_condconv_stage))
        model.reset_parameters()
    return model


def _efficientnet_blocks(depth: float, experts: int, first_cc: int) -> list[nn.Module]:
    """EfficientNet-B0's blocks (Table 1 of 1905.11946) with stages ``first_cc``.. as CondMBConv."""
    from reproductions.efficientnet.model import MBConv

    rows = [(s, round_repeats(s.repeats, depth)) for s in B0_STAGES]
    total, blocks = sum(r for _, r in rows), []
    for index, (stage, repeats) in enumerate(rows):
        in_ch, out_ch = round_filters(stage.in_channels, 1.0), round_filters(stage.out_channels, 1.0)
        for r in range(repeats):
            keep = 1.0 - (1.0 - SURVIVAL_PROB) * len(blocks) / total
            args = (
                in_ch if r == 0 else out_ch,
                out_ch,
                stage.expand_ratio,
                stage.kernel,
                stage.stride if r == 0 else 1,
            )
            if index >= first_cc:
                blocks.append(CondMBConv(*args, num_experts=experts, survival_prob=keep))
            else:
                blocks.append(MBConv(*args, survival_prob=keep))
    return blocks


# MobileNetV1 (arXiv 1704.04861, Table 1): 3x3 conv stride 2 to 32 channels, then 13 depthwise-separable layers.
MOBILENETV1_LAYERS: tuple[tuple[int, int], ...] = (  # (output channels, stride)
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
)  # fmt: skip


def _bn_relu(channels: int) -> list[nn.Module]:
    return [nn.BatchNorm2d(channels, eps=BN_EPS, momentum=BN_MOMENTUM), nn.ReLU(inplace=True)]


class Separable(nn.Module):
    """Depthwise 3x3 + BN + ReLU -> pointwise 1x1 + BN + ReLU (MobileNetV1 Figure 3)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        self.depthwise = nn.Sequential(
            nn.Conv2d(in_channels, in_channels, 3, stride, 1, groups=in_channels, bias=False), *_bn_relu(in_channels)
        )
        self.pointwise = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False), *_bn_relu(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


class CondSeparable(nn.Module):
    """:class:`Separable` with CondConv depthwise and pointwise convs sharing the layer's routing."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, num_experts: int) -> None:
        super().__init__()
        self.routing = Routing(in_channels, num_experts)
        self.depthwise = CondConvBNAct(in_channels, in_channels, 3, num_experts, stride, in_channels, nn.ReLU())
        self.pointwise = CondConvBNAct(in_channels, out_channels, 1, num_experts, act=nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = self.routing(x)  # (N, n)
        return self.pointwise(self.depthwise(x, r), r)


class MobileNetV1(nn.Module):
    """MobileNetV1 with optional CondConv in the last ``condconv_layers`` separable layers and the classifier."""

    def __init__(
        self,
        width: float = 1.0,
        num_classes: int = 1000,
        num_experts: int = 0,
        condconv_layers: int = 6,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()

        def depth(c: int) -> int:  # slim mobilenet_v1: max(int(d * depth_multiplier), min_depth=8)
            return max(int(c * width), 8)

        channels = depth(32)
        layers: list[nn.Module] = [nn.Sequential(nn.Conv2d(3, channels, 3, 2, 1, bias=False), *_bn_relu(channels))]
        first_cc = len(MOBILENETV1_LAYERS) - condconv_layers if num_experts else len(MOBILENETV1_LAYERS)
        for index, (out, stride) in enumerate(MOBILENETV1_LAYERS):
            out = depth(out)
            block = (
                CondSeparable(channels, out, stride, num_experts)
                if index >= first_cc
                else Separable(channels, out, stride)
            )
            layers.append(block)
            channels = out
        self.features = nn.Sequential(*layers)
        self.dropout = nn.Dropout(dropout)
        if num_experts:
            self.classifier_routing = Routing(channels, num_experts)
            self.classifier = CondConv2d(channels, num_classes, 1, num_experts, bias=True)
        else:
            self.classifier = nn.Conv2d(channels, num_classes, 1)  # slim's 1x1 "Logits" conv
        self._init()

    def _init(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)  # (N, 3, 224, 224) -> (N, 1024, 7, 7) at width 1
        x = self.dropout(x.mean(dim=(2, 3), keepdim=True))  # -> (N, 1024, 1, 1)
        if isinstance(self.classifier, CondConv2d):
            x = self.classifier(x, self.classifier_routing(x))
        else:
            x = self.classifier(x)
        return x.flatten(1)  # -> (N, num_classes)


def mobilenetv1_condconv(
    variant: str = "condconv-mobilenetv1-1.0-8e", num_classes: int = 1000, dropout: float = 0.0
) -> MobileNetV1:
    """Build a MobileNetV1 model of :data:`MOBILENETV1_VARIANTS` (``experts = 0``: the plain baseline)."""
    if variant not in MOBILENETV1_VARIANTS:
        raise ValueError(f"unknown CondConv MobileNetV1 variant {variant!r}; known: {', '.join(MOBILENETV1_VARIANTS)}")
    row = MOBILENETV1_VARIANTS[variant]
    return MobileNetV1(row.width, num_classes, row.experts, row.condconv_layers, dropout)


def build(variant: str, num_classes: int = 1000, dropout: float | None = None) -> nn.Module:
    """Any CondConv-paper model id of :data:`EFFICIENTNET_VARIANTS` or :data:`MOBILENETV1_VARIANTS`."""
    if variant in EFFICIENTNET_VARIANTS:
        return efficientnet_condconv(variant, num_classes, dropout)
    if variant in MOBILENETV1_VARIANTS:
        return mobilenetv1_condconv(variant, num_classes, 0.0 if dropout is None else dropout)
    known = ", ".join([*EFFICIENTNET_VARIANTS, *MOBILENETV1_VARIANTS])
    raise ValueError(f"unknown CondConv model {variant!r}; known: {known}")
