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
  squeeze-excite, BN, swish, drop-connect and the stem/head are EfficientNet-B0's (:mod:`nets.mbconv`, shared with
  the EfficientNet reproduction); classifier dropout 0.25.
- MobileNetV1 (Howard et al. 2017, arXiv 1704.04861) at width 0.25-1.0, with CondConv in its last
  ``condconv_layers`` depthwise-separable layers (depthwise and pointwise share the layer's routing, computed from
  the layer input) and in the classifier. Which layers the paper converts could not be read for this reproduction
  (see README): the default, the last 6 separable layers and the classifier, is this harness's assumption.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nets.mbconv import (
    B0_STAGES,
    BN_EPS,
    BN_MOMENTUM,
    SE_RATIO,
    SURVIVAL_PROB,
    MBConv,
    MBConvNet,
    SqueezeExcitation,
    drop_connect,
    round_filters,
    round_repeats,
)
from nets.resnet import BOTTLENECK_EXPANSION, STAGE_WIDTHS, conv_bn, resnet
from nets.specs import MOBILENETV2_ROWS
from reproductions.condconv.variants import (
    ALL_VARIANTS,
    BUDGET_LAYERS,
    BUDGET_STEM,
    BUDGET_VARIANTS,
    EFFICIENTNET_VARIANTS,
    INVERTED_RESIDUAL_VARIANTS,
    MNASNET_A1_ROWS,
    MOBILENETV1_VARIANTS,
    RESNET_VARIANTS,
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
    model = MBConvNet(width=1.0, depth=row.depth, dropout=dropout, num_classes=num_classes)
    if row.experts:
        model.blocks = nn.Sequential(*_efficientnet_blocks(row.depth, row.experts, row.first_condconv_stage))
        model.reset_parameters()
    return model


def _efficientnet_blocks(depth: float, experts: int, first_cc: int) -> list[nn.Module]:
    """EfficientNet-B0's blocks (Table 1 of 1905.11946) with stages ``first_cc``.. as CondMBConv."""
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


class CondClassifier(nn.Module):
    """The final fully connected layer as a CondConv: (N, C) -> (N, classes), routed from its own input.

    A fully connected layer is a 1x1 convolution on the pooled (N, C, 1, 1) map, so its CondConv form is
    :class:`CondConv2d` with a mixed bias; the routing's global average pool of a 1x1 map is the input itself.
    """

    def __init__(self, in_features: int, num_classes: int, num_experts: int) -> None:
        super().__init__()
        self.routing = Routing(in_features, num_experts)
        self.conv = CondConv2d(in_features, num_classes, 1, num_experts, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, None, None]  # (N, C) -> (N, C, 1, 1)
        return self.conv(x, self.routing(x)).flatten(1)  # -> (N, classes)


def classifier(in_features: int, num_classes: int, num_experts: int) -> nn.Module:
    """A plain fully connected classifier, or its CondConv form when ``num_experts > 0``."""
    return CondClassifier(in_features, num_classes, num_experts) if num_experts else nn.Linear(in_features, num_classes)


class MobileNetV1(nn.Module):
    """MobileNetV1 with optional CondConv in the last ``condconv_layers`` separable layers and the classifier.

    ``layers`` is the (output channels, stride) table after the 3x3 stem (MobileNetV1's Table 1 by default);
    ``in_channels``, ``stem`` and ``stem_stride`` let the budget tier build a small grey-scale net from the same code.
    """

    def __init__(
        self,
        width: float = 1.0,
        num_classes: int = 1000,
        num_experts: int = 0,
        condconv_layers: int = 6,
        dropout: float = 0.0,
        layers: tuple[tuple[int, int], ...] = MOBILENETV1_LAYERS,
        in_channels: int = 3,
        stem: int = 32,
        stem_stride: int = 2,
    ) -> None:
        super().__init__()

        def depth(c: int) -> int:  # slim mobilenet_v1: max(int(d * depth_multiplier), min_depth=8)
            return max(int(c * width), 8)

        channels = depth(stem)
        stem_conv = nn.Conv2d(in_channels, channels, 3, stem_stride, 1, bias=False)
        blocks: list[nn.Module] = [nn.Sequential(stem_conv, *_bn_relu(channels))]
        first_cc = len(layers) - condconv_layers if num_experts else len(layers)
        for index, (out, stride) in enumerate(layers):
            out = depth(out)
            if index >= first_cc:
                blocks.append(CondSeparable(channels, out, stride, num_experts))
            else:
                blocks.append(Separable(channels, out, stride))
            channels = out
        self.features = nn.Sequential(*blocks)
        self.dropout = nn.Dropout(dropout)
        self.classifier = classifier(channels, num_classes, num_experts)
        _init_static(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)  # (N, 3, 224, 224) -> (N, 1024, 7, 7) at width 1
        return self.classifier(self.dropout(x.mean(dim=(2, 3))))  # -> (N, 1024) -> (N, num_classes)


def _init_static(model: nn.Module) -> None:
    """He-normal (fan-out) static convs, N(0, 0.01) dense layers (CondConv experts initialise themselves)."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.01)
            nn.init.zeros_(m.bias)


def mobilenetv1_condconv(
    variant: str = "condconv-mobilenetv1-1.0-8e", num_classes: int = 1000, dropout: float = 0.0
) -> MobileNetV1:
    """Build a MobileNetV1 model of :data:`MOBILENETV1_VARIANTS` (``experts = 0``: the plain baseline)."""
    if variant not in MOBILENETV1_VARIANTS:
        raise ValueError(f"unknown CondConv MobileNetV1 variant {variant!r}; known: {', '.join(MOBILENETV1_VARIANTS)}")
    row = MOBILENETV1_VARIANTS[variant]
    return MobileNetV1(row.width, num_classes, row.experts, row.condconv_layers, dropout)


def budget_net(variant: str, num_classes: int = 10, dropout: float = 0.0) -> MobileNetV1:
    """The budget tier's small grey-scale MobileNetV1 of :data:`BUDGET_VARIANTS` (28x28 Fashion-MNIST)."""
    row = BUDGET_VARIANTS[variant]
    return MobileNetV1(
        row.width, num_classes, row.experts, row.condconv_layers, dropout, BUDGET_LAYERS, 1, BUDGET_STEM, 1
    )


# ---- MobileNetV2 (arXiv 1801.04381) and MnasNet-A1 (arXiv 1807.11626): inverted residual networks ----


class ConvBNAct(nn.Module):
    """Convolution (static, or CondConv when ``num_experts > 0``) -> BatchNorm -> activation.

    ``forward(x, routing)``: the routing weights are used only by the CondConv form."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int,
        num_experts: int = 0,
        stride: int = 1,
        groups: int = 1,
        act: nn.Module | None = None,
    ) -> None:
        super().__init__()
        pad = kernel // 2
        if num_experts:
            self.conv: nn.Module = CondConv2d(in_channels, out_channels, kernel, num_experts, stride, pad, groups)
        else:
            self.conv = nn.Conv2d(in_channels, out_channels, kernel, stride, pad, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.act = act if act is not None else nn.Identity()

    def forward(self, x: torch.Tensor, routing: torch.Tensor | None = None) -> torch.Tensor:
        y = self.conv(x) if routing is None else self.conv(x, routing)
        return self.act(self.bn(y))


class InvertedResidual(nn.Module):
    """1x1 expansion -> kxk depthwise -> (squeeze-excite) -> 1x1 linear projection, identity skip when shapes match.

    With ``num_experts > 0`` the three convolutions are CondConv layers sharing one routing function of the block
    input (as the release's CondConv MBConv block)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        expand_ratio: int,
        kernel: int,
        stride: int,
        num_experts: int = 0,
        act: type[nn.Module] = nn.ReLU6,
        se_ratio: float = 0.0,
    ) -> None:
        super().__init__()
        hidden, n = in_channels * expand_ratio, num_experts
        self.routing = Routing(in_channels, n) if n else None
        self.expand = ConvBNAct(in_channels, hidden, 1, n, act=act()) if expand_ratio != 1 else None
        self.depthwise = ConvBNAct(hidden, hidden, kernel, n, stride, groups=hidden, act=act())
        self.se = None
        if se_ratio:
            self.se = SqueezeExcitation(hidden, max(1, int(in_channels * se_ratio)))
            self.se.act = act()  # MnasNet's squeeze-excite uses the network's activation (ReLU), not swish
        self.project = ConvBNAct(hidden, out_channels, 1, n)
        self.has_skip = stride == 1 and in_channels == out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = self.routing(x) if self.routing is not None else None  # (N, n) from the block input
        y = self.expand(x, r) if self.expand is not None else x  # (N, C_in, H, W) -> (N, t C_in, H, W)
        y = self.depthwise(y, r)  # -> (N, t C_in, H/s, W/s)
        if self.se is not None:
            y = self.se(y)
        y = self.project(y, r)  # -> (N, C_out, H/s, W/s)
        return y + x if self.has_skip else y


class InvertedResidualNet(nn.Module):
    """Stem 3x3/2 -> inverted-residual rows -> 1x1 head conv -> pool -> dropout -> classifier.

    ``rows`` are (expansion t, channels c, repeats n, stride s, kernel k, se ratio); CondConv (``num_experts``)
    replaces the convolutions of the last ``condconv_blocks`` blocks and the classifier."""

    def __init__(
        self,
        rows: tuple[tuple[int, int, int, int, int, float], ...],
        act: type[nn.Module],
        num_experts: int = 0,
        condconv_blocks: int = 0,
        num_classes: int = 1000,
        dropout: float = 0.2,
        stem: int = 32,
        head: int = 1280,
    ) -> None:
        super().__init__()
        self.stem = ConvBNAct(3, stem, 3, stride=2, act=act())
        total = sum(n for _, _, n, _, _, _ in rows)
        first_cc = total - condconv_blocks if num_experts else total
        blocks, channels = [], stem
        for t, c, n, s, k, se in rows:
            for i in range(n):
                experts = num_experts if len(blocks) >= first_cc else 0
                blocks.append(InvertedResidual(channels, c, t, k, s if i == 0 else 1, experts, act, se))
                channels = c
        self.blocks = nn.Sequential(*blocks)
        self.head = ConvBNAct(channels, head, 1, act=act())
        self.dropout = nn.Dropout(dropout)
        self.classifier = classifier(head, num_classes, num_experts)
        _init_static(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.blocks(self.stem(x)))  # (N, 3, 224, 224) -> (N, 1280, 7, 7)
        return self.classifier(self.dropout(x.mean(dim=(2, 3))))  # -> (N, num_classes)


# family -> (rows, activation). MobileNetV2: Table 2 of arXiv 1801.04381 (:data:`nets.specs.MOBILENETV2_ROWS`), 3x3
# depthwise kernels, no squeeze-excite, ReLU6. MnasNet-A1: ReLU, squeeze-excite in three rows.
INVERTED_RESIDUAL_FAMILIES = {
    "mobilenetv2": (tuple((t, c, n, s, 3, 0.0) for t, c, n, s in MOBILENETV2_ROWS), nn.ReLU6),
    "mnasnet-a1": (MNASNET_A1_ROWS, nn.ReLU),
}


def inverted_residual_net(variant: str, num_classes: int = 1000, dropout: float | None = None) -> InvertedResidualNet:
    """MobileNetV2 1.0 or MnasNet-A1, plain or CondConv, from :data:`INVERTED_RESIDUAL_VARIANTS`."""
    row = INVERTED_RESIDUAL_VARIANTS[variant]
    rows, act = INVERTED_RESIDUAL_FAMILIES[row.family]
    dropout = row.dropout if dropout is None else dropout
    return InvertedResidualNet(rows, act, row.experts, row.condconv_blocks, num_classes, dropout)


# ---- ResNet-50 (arXiv 1512.03385) with CondConv bottlenecks in its last stage(s) ----


class CondBottleneck(nn.Module):
    """ResNet's bottleneck (1x1 reduce -> 3x3 -> 1x1 expand, zero-init last BN) with the three convs as CondConv
    layers sharing one routing of the block input; the projection shortcut stays a static 1x1 conv + BN."""

    def __init__(self, in_channels: int, width: int, stride: int, num_experts: int) -> None:
        super().__init__()
        out_channels, n = width * BOTTLENECK_EXPANSION, num_experts
        self.routing = Routing(in_channels, n)
        self.conv1 = ConvBNAct(in_channels, width, 1, n, act=nn.ReLU(inplace=True))
        self.conv2 = ConvBNAct(width, width, 3, n, stride, act=nn.ReLU(inplace=True))
        self.conv3 = ConvBNAct(width, out_channels, 1, n)
        nn.init.zeros_(self.conv3.bn.weight)  # init_zero, as the static bottleneck
        needs_projection = stride != 1 or in_channels != out_channels
        self.shortcut = conv_bn(in_channels, out_channels, 1, stride) if needs_projection else None
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.shortcut is None else self.shortcut(x)
        r = self.routing(x)  # (N, n)
        y = self.conv3(self.conv2(self.conv1(x, r), r), r)  # (N, C_in, H, W) -> (N, 4w, H/s, W/s)
        return self.relu(y + identity)


def resnet_condconv(variant: str, num_classes: int = 1000, dropout: float | None = None) -> nn.Module:
    """ResNet-50 of :mod:`nets.resnet`, its last ``condconv_stages`` stages and its classifier as CondConv
    (``experts = 0``: the plain ResNet-50)."""
    row = RESNET_VARIANTS[variant]
    model = resnet(row.depth, num_classes)
    if not row.experts:
        return model
    layers = model.stages
    for stage in range(len(layers) - row.condconv_stages, len(layers)):
        width = STAGE_WIDTHS[stage]
        in_channels = STAGE_WIDTHS[stage - 1] * BOTTLENECK_EXPANSION if stage else STAGE_WIDTHS[0]
        blocks = []
        for index in range(len(layers[stage])):
            stride = 2 if stage > 0 and index == 0 else 1
            blocks.append(CondBottleneck(in_channels, width, stride, row.experts))
            in_channels = width * BOTTLENECK_EXPANSION
        layers[stage] = nn.Sequential(*blocks)
    model.fc = classifier(model.fc.in_features, num_classes, row.experts)
    return model


def build(variant: str, num_classes: int = 1000, dropout: float | None = None) -> nn.Module:
    """Any CondConv-paper model id of :data:`reproductions.condconv.variants.ALL_VARIANTS`."""
    if variant in EFFICIENTNET_VARIANTS:
        return efficientnet_condconv(variant, num_classes, dropout)
    if variant in MOBILENETV1_VARIANTS:
        return mobilenetv1_condconv(variant, num_classes, 0.0 if dropout is None else dropout)
    if variant in INVERTED_RESIDUAL_VARIANTS:
        return inverted_residual_net(variant, num_classes, dropout)
    if variant in RESNET_VARIANTS:
        return resnet_condconv(variant, num_classes)
    if variant in BUDGET_VARIANTS:
        return budget_net(variant, num_classes, 0.0 if dropout is None else dropout)
    raise ValueError(f"unknown CondConv model {variant!r}; known: {', '.join(ALL_VARIANTS)}")
