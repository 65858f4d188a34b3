"""Searching for MobileNetV3 (Howard et al., ICCV 2019), arXiv 1905.02244v5.

MobileNetV3-Large and -Small are the bneck tables of Tables 1 and 2 (:mod:`reproductions.mobilenetv3.variants`),
built the way the authors' release builds them (tensorflow/models, research/slim/nets/mobilenet: ``mobilenet_v3.py``,
``conv_blocks.py`` and ``mobilenet.py``):

- bneck = [1x1 expansion conv, BN, NL] (only when the expansion size exceeds the input channels, as
  ``expanded_conv``) -> kxk depthwise conv, BN, NL -> squeeze-excite (optional) -> 1x1 projection conv, BN (linear)
  -> identity skip when stride 1 and in == out channels.
- Squeeze-excite (Section 5.3): global mean -> 1x1 conv (bias) to ``make_divisible(expansion / 4, 8)`` channels ->
  ReLU -> 1x1 conv (bias) back to the expansion size -> hard sigmoid -> channel-wise scale. The squeeze width is the
  release's ``squeeze_excite(squeeze_factor=4, divisible_by=8)`` of the *expansion* channels.
- h-swish(x) = x ReLU6(x + 3) / 6 and hard sigmoid = ReLU6(x + 3) / 6 (Section 5.2).
- Last stage (Section 5.1, Figure 5): 1x1 conv + BN + NL at 7x7, global average pool, 1x1 conv *without* BN
  (bias, NL) to 1280 (Large) / 1024 (Small), dropout, then the classifier. The two pooled 1x1 convs are written as
  ``nn.Linear`` (same parameters and multiply-adds).
- Width multiplier (the release's ``depth_multiplier``): every layer's output channels become
  ``make_divisible(c * width, 8)``, including the stem; expansion sizes are the row's expansion factor times the
  (scaled) input channels, rounded the same way. The pooled 1x1 conv keeps 1280 / 1024 channels below width 1 (the
  release's ``finegrain_classification_mode``, from MobileNetV2): only then do the 0.75 models have Table 3's 4.0M
  and 2.0M parameters (scaling it too gives 3.44M and 1.68M).
- BatchNorm decay 0.99 (Section 6.1; PyTorch ``momentum=0.01``) and the TF epsilon 1e-3. Convs pad symmetrically
  (``k // 2``, dilated accordingly); TF's 'SAME' pads stride-2 layers asymmetrically, which changes no shape,
  parameter or multiply-add (it matters only for weights converted from TF).
- Initialisation (not given in the paper): He normal (fan-out) convs, N(0, 0.01) linear layers, zero biases.

Dense prediction (Section 6.4, Figure 10, Tables 7 and 8): :class:`LRASPP` follows the release's DeepLab
configuration (``feature_extractor.mobilenet_v3_{large,small}_seg`` with the model-zoo flags
``aspp_with_squeeze_and_excitation``, ``aspp_convs_filters=128``, ``image_pooling_crop_size=769``,
``image_pooling_stride=4,5``, ``decoder_output_stride=8``, ``decoder_use_sum_merge``, ``decoder_output_is_logits``,
``image_se_uses_qsigmoid``):

- backbone up to the 1x1 conv before pooling, with the last block's channels halved (:func:`reduce_last_block`)
  and atrous convolution from output stride 16 on (the stride-2 block becomes stride 1, later blocks dilation 2);
- head on the 1/16 features: [1x1 conv (128) + BN + ReLU] x [avg-pool 49x49 stride (4, 5) -> 1x1 conv (128, bias)
  -> hard sigmoid -> bilinear upsampling], bilinear upsampling to 1/8, 1x1 conv to the classes; plus a 1x1 conv to
  the classes of the 1/8 low-level features (the depthwise output of the 3rd 40-channel block of Large, of the
  88-channel block of Small); the sum is upsampled to the input size. The pool window is the 769-px training crop at
  the output stride (the release's ``scale_dimension(769, 1 / output_stride)``): 49x49 at 16, 25x25 at 32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from reproductions.mobilenetv3.variants import (  # noqa: F401  (re-exported for callers)
    ARCHITECTURES,
    CITYSCAPES_CLASSES,
    LOW_LEVEL_BLOCK,
    POOLING_CROP,
    SEG_VARIANTS,
    VARIANTS,
    Architecture,
    expansion_factor,
    minimalistic,
    reduce_last_block,
)

BN_MOMENTUM = 0.01  # PyTorch convention: 1 - TF's decay 0.99
BN_EPS = 1e-3
DIVISOR = 8
DROPOUT = 0.2  # Section 6.1 "dropout of 0.8" is TF's keep probability (slim training_scope dropout_keep_prob=0.8)


def make_divisible(value: float, divisor: int = DIVISOR) -> int:
    """The release's ``_make_divisible``: round to a multiple of ``divisor``, never below it nor >10% down."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return int(rounded)


def hard_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """ReLU6(x + 3) / 6 (Section 5.2)."""
    return F.relu6(x + 3.0) / 6.0


def hard_swish(x: torch.Tensor) -> torch.Tensor:
    """h-swish[x] = x ReLU6(x + 3) / 6 (Section 5.2)."""
    return x * hard_sigmoid(x)


class HardSwish(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return hard_swish(x)


def activation(nl: str) -> nn.Module:
    """``"RE"`` -> ReLU, ``"HS"`` -> h-swish, as the NL column of Tables 1 and 2."""
    if nl == "RE":
        return nn.ReLU(inplace=True)
    if nl == "HS":
        return HardSwish()
    raise ValueError(f"unknown nonlinearity {nl!r}; the tables use 'RE' and 'HS'")


class ConvBNAct(nn.Sequential):
    """kxk conv (no bias) -> BatchNorm -> optional activation; ``groups == channels`` makes it depthwise."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int,
        stride: int = 1,
        groups: int = 1,
        nl: str | None = "RE",
        dilation: int = 1,
    ) -> None:
        padding = (kernel - 1) // 2 * dilation
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel, stride, padding, dilation, groups=groups, bias=False),
            nn.BatchNorm2d(out_channels, eps=BN_EPS, momentum=BN_MOMENTUM),
            activation(nl) if nl else nn.Identity(),
        )


class SqueezeExcite(nn.Module):
    """x * hard_sigmoid(W2 ReLU(W1 mean_hw(x) + b1) + b2), squeeze width make_divisible(C / 4, 8)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        squeezed = make_divisible(channels / 4)
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean(dim=(2, 3), keepdim=True)  # (N, C, 1, 1)
        s = self.expand(F.relu(self.reduce(s)))  # (N, C/4, 1, 1) -> (N, C, 1, 1)
        return x * hard_sigmoid(s)


class Bneck(nn.Module):
    """Inverted residual with linear bottleneck, optional squeeze-excite, ReLU or h-swish (Figure 4)."""

    def __init__(
        self,
        in_channels: int,
        exp: int,
        out_channels: int,
        kernel: int,
        stride: int,
        se: bool,
        nl: str,
        dilation: int = 1,
    ) -> None:
        super().__init__()
        self.expand = ConvBNAct(in_channels, exp, 1, nl=nl) if exp > in_channels else nn.Identity()
        exp = exp if exp > in_channels else in_channels
        self.depthwise = ConvBNAct(exp, exp, kernel, stride, groups=exp, nl=nl, dilation=dilation)
        self.se = SqueezeExcite(exp) if se else nn.Identity()
        self.project = ConvBNAct(exp, out_channels, 1, nl=None)
        self.has_skip = stride == 1 and in_channels == out_channels

    def forward_with_depthwise(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The block output and its depthwise output (the release's ``depthwise_output`` end point)."""
        d = self.depthwise(self.expand(x))  # (N, C_in, H, W) -> (N, exp, H/s, W/s)
        y = self.project(self.se(d))  # -> (N, C_out, H/s, W/s)
        return (y + x if self.has_skip else y), d

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_with_depthwise(x)[0]


def _blocks(arch: Architecture, width: float, output_stride: int = 32) -> tuple[int, list[nn.Module], int]:
    """Stem, bnecks and the last 1x1 conv; strides past ``output_stride`` become dilation as the release's
    ``mobilenet_base``: the block that would exceed it keeps stride 1 and rate 1, later blocks get rate 2."""
    stem = make_divisible(arch.stem * width)
    layers: list[nn.Module] = [ConvBNAct(3, stem, 3, 2, nl=arch.stem_nl)]
    current, rate, channels = 2, 1, stem
    for index, row in enumerate(arch.rows):
        out = make_divisible(row.out * width)
        exp = make_divisible(channels * expansion_factor(arch, index))
        stride, dilation = row.stride, rate
        if current == output_stride:
            stride, rate = 1, rate * row.stride
        else:
            current *= row.stride
        layers.append(Bneck(channels, exp, out, row.kernel, stride, row.se, row.nl, dilation))
        channels = out
    last = make_divisible(arch.last_conv * width)
    layers.append(ConvBNAct(channels, last, 1, nl=arch.head_nl))
    if arch.last_conv_se:
        layers.append(SqueezeExcite(last))
    return stem, layers, last


def init_weights(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.01)
            nn.init.zeros_(m.bias)


class MobileNetV3(nn.Module):
    """Stem -> bnecks -> 1x1 conv -> pool -> 1x1 conv without BN (Linear) -> dropout -> classifier."""

    def __init__(
        self, arch: Architecture, width: float = 1.0, num_classes: int = 1000, dropout: float = DROPOUT
    ) -> None:
        super().__init__()
        _, layers, last = _blocks(arch, width)
        head = make_divisible(arch.head * max(1.0, width))  # kept at 1280 / 1024 below width 1 (see docstring)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(last, head)  # "conv2d 1x1, NBN" at 1x1 resolution
        self.head_act = activation(arch.head_nl)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(head, num_classes)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Shapes for Large 1.0 at 224 x 224.
        x = self.features(x)  # (N, 3, 224, 224) -> (N, 960, 7, 7)
        x = self.pool(x).flatten(1)  # -> (N, 960)
        x = self.head_act(self.head(x))  # -> (N, 1280)
        return self.classifier(self.dropout(x))  # -> (N, num_classes)


def mobilenetv3(variant: str = "large-1.0", num_classes: int = 1000, dropout: float = DROPOUT) -> MobileNetV3:
    """Build ``mobilenetv3-<variant>``: ``large-1.0``, ``large-0.75``, ``small-1.0``, ``small-0.75``, or a
    ``*-minimalistic`` one (the release's models without SE, h-swish and 5x5 kernels)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown MobileNetV3 variant {variant!r}; known: {', '.join(VARIANTS)}")
    row = VARIANTS[variant]
    arch = ARCHITECTURES[row.arch]
    return MobileNetV3(minimalistic(arch) if row.minimalistic else arch, row.width, num_classes, dropout)


class LRASPP(nn.Module):
    """Lite R-ASPP segmentation model on a MobileNetV3 backbone (Section 6.4, Figure 10), see the module docstring."""

    def __init__(
        self,
        arch: str = "large",
        num_classes: int = CITYSCAPES_CLASSES,
        output_stride: int = 16,
        head_channels: int = 128,
        pool_kernel: int = 49,
        pool_stride: tuple[int, int] = (4, 5),
    ) -> None:
        super().__init__()
        base = ARCHITECTURES[arch]
        _, layers, high = _blocks(reduce_last_block(base, 3), 1.0, output_stride)
        self.features = nn.ModuleList(layers)
        self.low_block = LOW_LEVEL_BLOCK[arch] + 1  # +1: features[0] is the stem
        low = layers[self.low_block].depthwise[0].out_channels
        self.cbr = ConvBNAct(high, head_channels, 1, nl="RE")
        self.scale = nn.Conv2d(high, head_channels, 1)  # the pooled branch: no BN, bias, hard sigmoid
        self.pool_kernel, self.pool_stride = pool_kernel, pool_stride
        self.high_classifier = nn.Conv2d(head_channels, num_classes, 1)
        self.low_classifier = nn.Conv2d(low, num_classes, 1)
        init_weights(self)

    def _backbone(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        low = x
        for index, layer in enumerate(self.features):
            if index == self.low_block:
                x, low = layer.forward_with_depthwise(x)
            else:
                x = layer(x)
        return low, x

    def _gate(self, high: torch.Tensor) -> torch.Tensor:
        kernel = (min(self.pool_kernel, high.shape[-2]), min(self.pool_kernel, high.shape[-1]))
        s = F.avg_pool2d(high, kernel, self.pool_stride)  # (N, C, 4, 16) for 64 x 128 features
        s = hard_sigmoid(self.scale(s))
        return F.interpolate(s, size=high.shape[-2:], mode="bilinear", align_corners=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Shapes for Large at 1024 x 2048, output stride 16.
        low, high = self._backbone(x)  # (N, 120, 128, 256), (N, 480, 64, 128)
        y = self.cbr(high) * self._gate(high)  # -> (N, 128, 64, 128)
        y = F.interpolate(y, size=low.shape[-2:], mode="bilinear", align_corners=True)  # -> (N, 128, 128, 256)
        y = self.high_classifier(y) + self.low_classifier(low)  # -> (N, classes, 128, 256)
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=True)  # -> (N, classes, H, W)


def lraspp(variant: str = "large-1.0-lraspp", num_classes: int = CITYSCAPES_CLASSES) -> LRASPP:
    """Build ``mobilenetv3-<variant>`` of :data:`SEG_VARIANTS` (the input size only matters for profiling)."""
    if variant not in SEG_VARIANTS:
        raise ValueError(f"unknown MobileNetV3 LR-ASPP variant {variant!r}; known: {', '.join(SEG_VARIANTS)}")
    row = SEG_VARIANTS[variant]
    pool_kernel = (POOLING_CROP - 1) // row.output_stride + 1  # 49 at output stride 16, 25 at 32
    return LRASPP(row.arch, num_classes, row.output_stride, row.head_channels, pool_kernel)


def count_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
