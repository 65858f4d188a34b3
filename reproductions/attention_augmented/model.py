"""Attention Augmented Convolutional Networks (Bello, Zoph, Vaswani, Shlens & Le, ICCV 2019), arXiv 1904.09925.

An attention-augmented convolution (Section 3) concatenates a convolution with ``Fout - dv`` output channels
and multi-head self-attention with ``dv`` output channels over all positions of the feature map:

    AAConv(X) = Concat[Conv(X), MHA(X)],   MHA(X) = Concat[O_1, ..., O_Nh] W^O
    O_h = Softmax((Q K^T + S_H^rel + S_W^rel) / sqrt(dk_h)) V

with ``Q, K, V`` from one 1x1 convolution of ``X`` (``2 dk + dv`` channels, split into ``Nh`` heads of
``dk_h = dk / Nh`` and ``dv_h = dv / Nh``), ``W^O`` a 1x1 convolution, and the two-dimensional relative logits of
Section 3.2: ``S_H^rel[i, j] = q_i . r^H_{j_y - i_y}`` and ``S_W^rel[i, j] = q_i . r^W_{j_x - i_x}``, learned
embeddings for every relative height and width offset, shared across heads (not across layers). As in the
TensorFlow code printed with the paper, the queries are scaled by ``dk_h^-0.5`` before both the content and the
relative logits, the embeddings are initialised N(0, dk_h^-0.5), and the 1x1 convolutions have biases.
``kappa = dk / Fout`` and ``upsilon = dv / Fout``; ``dk`` and ``dv`` are rounded to multiples of ``Nh``.

Where the paper puts it (variants.AUGMENTATION): the first spatial convolution of every residual block of the
last three stages (28, 14, 7 px at 224 px), ``Nh = 8``, ``kappa = 2 upsilon = 0.2`` (``kappa = upsilon = 0.25`` for
ResNet-34), a minimum of 20 key dimensions per head, and at 28 x 28 the self-attention runs on a 3x3 / stride-2
average-pooled input whose output is upsampled bilinearly for the concatenation. These settings were read as the
paper's ImageNet setup but could not be re-checked against the arXiv text while writing this reproduction; they
are the ones under which the parameter counts of the paper's ResNet table come out (25.8M, 45.4M, 61.6M, 20.7M;
see README.md): without the 20-dimension minimum AA-ResNet-50 would have 25.1M parameters, and with
``kappa = 2 upsilon = 0.2`` AA-ResNet-34 would have 21.4M.

Strided blocks: a stride-``s`` augmented convolution attends over the ``s``-times average-pooled input (3x3
kernels, stride 2, padding 1), so its attention output is already at the convolution's output resolution.

Relative embeddings are allocated for the feature map of a 224 px input (``attention_size`` per stage); a
smaller map uses the central offsets, a larger one interpolates them linearly (documented, not from the paper).

:func:`build_detector` puts a (AA-)ResNet-50/101 (:mod:`nets.resnet`) under the RetinaNet of :mod:`nets.retinanet` for
the paper's COCO table (tables sized for 640 px); :func:`build_budget` builds the budget tier's small plain /
augmented ResNet pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from nets.resnet import ResNet, conv3x3
from nets.retinanet import FPN, RetinaNet
from nets.specs import RESNETS
from reproductions.attention_augmented.variants import (
    AUGMENTATION,
    BUDGET,
    DETECTION_NUM_CLASSES,
    DETECTORS,
    IMAGE_SIZE,
    Augmentation,
)

STAGE_STRIDES = (4, 8, 16, 32)  # output stride of conv2_x..conv5_x with the ImageNet stem
CIFAR_STAGE_STRIDES = (1, 2, 4, 8)  # the same with the 3x3 / stride-1 stem


def head_dims(channels: float, heads: int, minimum_per_head: int = 0) -> int:
    """Round ``channels`` to a multiple of ``heads`` (at least one per head, and ``minimum_per_head`` per head)."""
    per_head = max(1, round(channels / heads), minimum_per_head)
    return per_head * heads


def relative_offsets_table(embeddings: torch.Tensor, length: int) -> torch.Tensor:
    """Embeddings ``(2L - 1, d)`` for offsets ``-(L-1)..L-1`` of a map of side ``length`` from a learned table.

    The table holds offsets ``-(M-1)..M-1`` for its design size ``M``: a smaller map takes the central rows, a
    larger one a linear interpolation of the table to ``2L - 1`` rows.
    """
    rows = 2 * length - 1
    if rows == embeddings.shape[0]:
        return embeddings
    if rows < embeddings.shape[0]:
        start = (embeddings.shape[0] - rows) // 2
        return embeddings[start : start + rows]
    return F.interpolate(embeddings.t()[None], size=rows, mode="linear", align_corners=True)[0].t()


def relative_logits(q: torch.Tensor, rel_height: torch.Tensor, rel_width: torch.Tensor) -> torch.Tensor:
    """``S_H^rel + S_W^rel`` of Section 3.2 for queries ``q`` of shape ``(N, Nh, H, W, d)``.

    ``rel_height`` is ``(2H - 1, d)`` and ``rel_width`` ``(2W - 1, d)``, row ``o + L - 1`` holding offset ``o``.
    Returns logits ``(N, Nh, H*W, H*W)`` with query position ``(y, x)`` at row ``y*W + x`` and key position
    ``(y', x')`` at column ``y'*W + x'``: ``q[y, x] . (r^H[y' - y] + r^W[x' - x])``.
    """
    n, heads, height, width, _ = q.shape
    offsets_h = torch.arange(height, device=q.device)
    offsets_w = torch.arange(width, device=q.device)
    table_h = rel_height[offsets_h[None, :] - offsets_h[:, None] + height - 1]  # (H_q, H_k, d): r^H[y' - y]
    table_w = rel_width[offsets_w[None, :] - offsets_w[:, None] + width - 1]  # (W_q, W_k, d): r^W[x' - x]
    logits_h = torch.einsum("nhywd,ykd->nhywk", q, table_h)  # (N, Nh, H, W, H_k)
    logits_w = torch.einsum("nhywd,wkd->nhywk", q, table_w)  # (N, Nh, H, W, W_k)
    logits = logits_h[..., :, None] + logits_w[..., None, :]  # (N, Nh, H, W, H_k, W_k)
    return logits.reshape(n, heads, height * width, height * width)


class RelativeSelfAttention2d(nn.Module):
    """Multi-head 2-D self-attention with relative height and width logits (Eq. 1-2 and Section 3.2)."""

    def __init__(
        self, in_channels: int, key_channels: int, value_channels: int, heads: int, size: int, relative: bool = True
    ) -> None:
        super().__init__()
        if key_channels % heads or value_channels % heads:
            raise ValueError(f"dk={key_channels} and dv={value_channels} must be multiples of Nh={heads}")
        self.heads, self.dk, self.dv = heads, key_channels, value_channels
        self.qkv = nn.Conv2d(in_channels, 2 * key_channels + value_channels, 1)
        self.project = nn.Conv2d(value_channels, value_channels, 1)  # W^O
        dkh = key_channels // heads
        self.rel_height = nn.Parameter(torch.randn(2 * size - 1, dkh) * dkh**-0.5) if relative else None
        self.rel_width = nn.Parameter(torch.randn(2 * size - 1, dkh) * dkh**-0.5) if relative else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, _, height, width = x.shape
        q, k, v = self.qkv(x).split([self.dk, self.dk, self.dv], dim=1)  # (N, dk|dk|dv, H, W)
        q = q.reshape(n, self.heads, -1, height, width).permute(0, 1, 3, 4, 2)  # (N, Nh, H, W, dkh)
        q = q * (self.dk // self.heads) ** -0.5
        k = k.reshape(n, self.heads, -1, height * width)  # (N, Nh, dkh, HW)
        v = v.reshape(n, self.heads, -1, height * width)  # (N, Nh, dvh, HW)
        logits = q.reshape(n, self.heads, height * width, -1) @ k  # (N, Nh, HW, HW)
        if self.rel_height is not None:
            rel_h = relative_offsets_table(self.rel_height, height)
            rel_w = relative_offsets_table(self.rel_width, width)
            logits = logits + relative_logits(q, rel_h, rel_w)
        weights = logits.softmax(dim=-1)
        out = v @ weights.transpose(-1, -2)  # (N, Nh, dvh, HW): out[:, :, :, i] = sum_j w[i, j] v[:, :, :, j]
        return self.project(out.reshape(n, self.dv, height, width))  # combine heads, then W^O


class AugmentedConv2d(nn.Module):
    """``Concat[Conv(X), MHA(X)]``: a kxk convolution to ``Fout - dv`` channels beside relative self-attention."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        stride: int = 1,
        key_channels: int = 40,
        value_channels: int = 8,
        heads: int = 8,
        size: int = 14,
        downsample: bool = False,
        relative: bool = True,
    ) -> None:
        super().__init__()
        if not 0 < value_channels < out_channels:
            raise ValueError(f"dv={value_channels} must lie between 0 and Fout={out_channels}")
        self.conv = nn.Conv2d(
            in_channels, out_channels - value_channels, kernel_size, stride, padding=kernel_size // 2, bias=False
        )
        self.attention = RelativeSelfAttention2d(in_channels, key_channels, value_channels, heads, size, relative)
        self.pools = int(math.log2(stride)) + int(downsample)  # 3x3/2 average pools before the attention

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        conv_out = self.conv(x)  # (N, Fout - dv, H/s, W/s)
        a = x
        for _ in range(self.pools):
            a = F.avg_pool2d(a, 3, stride=2, padding=1, count_include_pad=False)
        attn_out = self.attention(a)  # (N, dv, H', W')
        if attn_out.shape[-2:] != conv_out.shape[-2:]:
            attn_out = F.interpolate(attn_out, size=conv_out.shape[-2:], mode="bilinear", align_corners=False)
        return torch.cat([conv_out, attn_out], dim=1)  # (N, Fout, H/s, W/s)


@dataclass(frozen=True)
class AugmentedConvFactory:
    """The ``spatial_conv`` hook of :class:`ResNet` that augments the stages named by ``augmentation``."""

    augmentation: Augmentation
    image_size: int = IMAGE_SIZE
    stage_strides: tuple[int, int, int, int] = STAGE_STRIDES

    def __call__(self, in_channels: int, out_channels: int, stride: int, stage: int) -> nn.Module:
        aug = self.augmentation
        if stage not in aug.stages:
            return conv3x3(in_channels, out_channels, stride)
        downsample = stage in aug.downsample_stages
        size = max(1, math.ceil(self.image_size / self.stage_strides[stage] / (2 if downsample else 1)))
        return AugmentedConv2d(
            in_channels,
            out_channels,
            3,
            stride,
            key_channels=head_dims(aug.kappa * out_channels, aug.heads, aug.min_key_dims_per_head),
            value_channels=head_dims(aug.upsilon * out_channels, aug.heads),
            heads=aug.heads,
            size=size,
            downsample=downsample,
        )


def aa_resnet(
    depth: int = 50,
    num_classes: int = 1000,
    augmentation: Augmentation | None = None,
    image_size: int = IMAGE_SIZE,
) -> ResNet:
    """AA-ResNet-``depth`` (34, 50, 101, 152) with the paper's settings unless ``augmentation`` is given.

    ``image_size`` sizes the relative-position tables (for the feature maps of that input).
    """
    if depth not in RESNETS:
        raise ValueError(f"unknown ResNet depth {depth}; known: {', '.join(map(str, RESNETS))}")
    augmentation = augmentation or AUGMENTATION.get(depth)
    if augmentation is None:
        raise ValueError(f"no attention-augmentation settings for ResNet-{depth}; pass augmentation=")
    return ResNet(RESNETS[depth], num_classes=num_classes, spatial_conv=AugmentedConvFactory(augmentation, image_size))


def build(depth: int = 50, augmented: bool = True, num_classes: int = 1000) -> ResNet:
    """The harness builder: AA-ResNet-``depth`` or, with ``augmented=False``, the plain ResNet baseline."""
    if augmented:
        return aa_resnet(depth, num_classes)
    return ResNet(RESNETS[depth], num_classes=num_classes)


def build_detector(name: str = "retinanet-aa-resnet50", num_classes: int = DETECTION_NUM_CLASSES) -> nn.Module:
    """A RetinaNet of the paper's COCO table (variants.DETECTORS): (AA-)ResNet backbone without its classifier,
    then the RetinaNet FPN and heads of :mod:`nets.retinanet`; relative tables sized for its 640 px input."""
    if name not in DETECTORS:
        raise ValueError(f"unknown attention-augmented detector {name!r}; known: {', '.join(DETECTORS)}")
    row = DETECTORS[name]
    if row.augmented:
        backbone = aa_resnet(row.depth, num_classes=0, image_size=row.image_size)
    else:
        backbone = ResNet(RESNETS[row.depth], num_classes=0)
    dims = 256
    return RetinaNet(backbone, FPN(backbone.out_channels[-3:], dims), dims, num_classes)


def build_budget(name: str = "aa-resnet10-w16", num_classes: int = 10) -> ResNet:
    """The budget tier's small ResNet (variants.BUDGET), plain or attention-augmented."""
    if name not in BUDGET:
        raise ValueError(f"unknown budget network {name!r}; known: {', '.join(BUDGET)}")
    row = BUDGET[name]
    spatial_conv = conv3x3
    if row.augmentation is not None:
        spatial_conv = AugmentedConvFactory(row.augmentation, row.image_size, CIFAR_STAGE_STRIDES)
    return ResNet(row.spec, num_classes, spatial_conv, stem="cifar", width=row.width, in_channels=row.in_channels)
