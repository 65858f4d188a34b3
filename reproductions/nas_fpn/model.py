"""NAS-FPN: Learning Scalable Feature Pyramid Architecture for Object Detection (Ghiasi, Lin & Le, CVPR 2019),
arXiv 1904.07392.

The pyramid network is ``N`` stacked copies of the discovered cell (variants.NASFPN_BLOCK_SPECS, Figure 7 of the
paper as the authors' code lists it), each mapping P3..P7 to a new P3..P7 with ``D`` channels. The implementation
follows the authors' code (tensorflow/tpu models/official/detection/modeling/architecture/nasfpn.py, class
``Nasfpn`` with its defaults ``block_fn='conv'``, ReLU, BatchNorm):

- inputs: C3..C5 of the backbone are resampled to ``D`` channels (1x1 conv + BatchNorm, no ReLU) and P6, P7 are
  added by 2x max pooling (stride 2, 'SAME') of the level below;
- a merging cell resamples its two inputs to its output level (1x1 conv + BatchNorm when the channels differ;
  max pooling with kernel = stride = ``2^(target - level)`` to go down; nearest-neighbour upsampling to go up),
  combines them with ``sum`` or ``attention`` (global pooling: ``a + b * sigmoid(max_hw(a))`` where ``a`` is the
  input at the coarser or equal level), and for output cells also sums every earlier node of the same level that
  no cell has used yet; then ReLU -> 3x3 conv (with bias) -> BatchNorm;
- the five output nodes of a cell (levels 3, 4, 5, 7, 6 in creation order) are its P3..P7.

NAS-FPNLite (Section 4.4): MobileNetV2 backbone, separable 3x3 convolutions in the pyramid network and the
RetinaNet heads, small ``D``. The paper's text on NAS-FPNLite's heads and input size was not read; the registered
models use 320 px inputs and separable heads of ``D`` channels (see README.md).

The RetinaNet, its FPN baseline and both backbones are the shared library's (:mod:`nets.retinanet`, :mod:`nets.resnet`,
:mod:`nets.mobilenetv2`); the cell and the pyramid network of stacked cells are this paper's.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from nets.mobilenetv2 import MobileNetV2
from nets.resnet import resnet
from nets.retinanet import FPN, MAX_LEVEL, MIN_LEVEL, RetinaNet, conv3x3
from reproductions.nas_fpn.variants import DETECTORS, NASFPN_BLOCK_SPECS, NUM_CLASSES, Detector

NUM_LEVELS = MAX_LEVEL - MIN_LEVEL + 1


def check_block_specs(specs: Sequence[tuple[int, str, tuple[int, int], bool]] = NASFPN_BLOCK_SPECS) -> None:
    """A cell is valid when every input exists before it is used, ops are known, and the outputs are P3..P7."""
    levels = list(range(MIN_LEVEL, MAX_LEVEL + 1))
    for index, (level, op, inputs, _) in enumerate(specs):
        if op not in ("sum", "attention"):
            raise ValueError(f"merging cell {index}: unknown binary op {op!r}")
        if not MIN_LEVEL <= level <= MAX_LEVEL:
            raise ValueError(f"merging cell {index}: output level {level} outside P{MIN_LEVEL}..P{MAX_LEVEL}")
        if any(not 0 <= i < len(levels) for i in inputs):
            raise ValueError(f"merging cell {index}: inputs {inputs} not among the {len(levels)} nodes built so far")
        levels.append(level)
    outputs = sorted(level for level, _, _, is_output in specs if is_output)
    if outputs != list(range(MIN_LEVEL, MAX_LEVEL + 1)) or levels[-NUM_LEVELS:] != [
        level for level, _, _, is_output in specs if is_output
    ]:
        raise ValueError(f"the cell's last {NUM_LEVELS} nodes must be its outputs, one per level P3..P7")


class Resample(nn.Module):
    """Bring a feature map from ``level`` (``in_channels``) to ``target`` level with ``dims`` channels."""

    def __init__(self, in_channels: int, dims: int, level: int, target: int) -> None:
        super().__init__()
        projects = in_channels != dims
        self.project = nn.Sequential(nn.Conv2d(in_channels, dims, 1), nn.BatchNorm2d(dims)) if projects else None
        self.level, self.target = level, target

    def forward(self, x: torch.Tensor, size: Sequence[int] | None = None) -> torch.Tensor:
        """``size`` is the spatial size of the target level (needed to upsample when sizes are not powers of 2)."""
        if self.project is not None:
            x = self.project(x)
        if self.level < self.target:
            stride = 2 ** (self.target - self.level)
            x = F.max_pool2d(x, stride, stride, ceil_mode=True)  # 'SAME' max pooling
        elif self.level > self.target:
            scale = 2 ** (self.level - self.target)
            size = size or (x.shape[-2] * scale, x.shape[-1] * scale)
            x = F.interpolate(x, size=tuple(size), mode="nearest")
        return x


def global_attention(coarse: torch.Tensor, fine: torch.Tensor) -> torch.Tensor:
    """Global-pooling merge of the official code: ``coarse + fine * sigmoid(max over H, W of coarse)``."""
    return coarse + fine * torch.sigmoid(coarse.amax(dim=(2, 3), keepdim=True))


class MergingCell(nn.Module):
    """One node of the cell: resample two inputs, merge them, add unused same-level nodes, ReLU-conv-BN."""

    def __init__(self, level: int, op: str, inputs: tuple[int, int], is_output: bool, node_levels: Sequence[int],
                 dims: int, separable: bool) -> None:  # fmt: skip
        super().__init__()
        self.level, self.op, self.inputs, self.is_output = level, op, inputs, is_output
        self.resample = nn.ModuleList(Resample(dims, dims, node_levels[i], level) for i in inputs)
        self.conv = conv3x3(dims, dims, separable)
        self.norm = nn.BatchNorm2d(dims)

    def forward(self, nodes: list[torch.Tensor], levels: list[int], used: list[int]) -> torch.Tensor:
        size = nodes[self.level - MIN_LEVEL].shape[-2:]  # the cell input at this level fixes the size
        a, b = (resample(nodes[i], size) for resample, i in zip(self.resample, self.inputs, strict=True))
        for i in self.inputs:
            used[i] += 1
        if self.op == "sum":
            x = a + b
        else:  # the input at the coarser (or equal) level gives the attention
            i, j = self.inputs
            x = global_attention(a, b) if levels[i] >= levels[j] else global_attention(b, a)
        if self.is_output:
            for index, (node, level) in enumerate(zip(nodes, levels, strict=True)):
                if used[index] == 0 and level == self.level:  # same level: no resampling needed
                    used[index] += 1
                    x = x + node
        return self.norm(self.conv(F.relu(x)))


class NASFPNCell(nn.Module):
    """The discovered cell: P3..P7 (``dims`` channels each) -> new P3..P7."""

    def __init__(self, dims: int, specs=NASFPN_BLOCK_SPECS, separable: bool = False) -> None:
        super().__init__()
        check_block_specs(specs)
        levels = list(range(MIN_LEVEL, MAX_LEVEL + 1))
        cells = []
        for level, op, inputs, is_output in specs:
            cells.append(MergingCell(level, op, tuple(inputs), is_output, levels, dims, separable))
            levels.append(level)
        self.cells = nn.ModuleList(cells)
        self.node_levels = levels

    def forward(self, pyramid: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        nodes, levels, used = list(pyramid), list(range(MIN_LEVEL, MAX_LEVEL + 1)), [0] * NUM_LEVELS
        for cell in self.cells:
            nodes.append(cell(nodes, levels, used))
            levels.append(cell.level)
            used.append(0)
        outputs = dict(zip(levels[-NUM_LEVELS:], nodes[-NUM_LEVELS:], strict=True))
        return [outputs[level] for level in range(MIN_LEVEL, MAX_LEVEL + 1)]


class NASFPN(nn.Module):
    """C3..C5 -> P3..P7 (resampled, P6/P7 pooled) -> ``repeats`` stacked cells."""

    def __init__(self, in_channels: Sequence[int], dims: int = 256, repeats: int = 7, separable: bool = False) -> None:
        super().__init__()
        levels = range(MIN_LEVEL, MIN_LEVEL + len(in_channels))
        inputs = [Resample(c, dims, level, level) for level, c in zip(levels, in_channels, strict=True)]
        inputs += [Resample(dims, dims, level - 1, level) for level in range(MIN_LEVEL + 3, MAX_LEVEL + 1)]
        self.inputs = nn.ModuleList(inputs)
        self.cells = nn.ModuleList(NASFPNCell(dims, separable=separable) for _ in range(repeats))

    def forward(self, features: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        pyramid = [self.inputs[i](c) for i, c in enumerate(features)]  # P3, P4, P5 from C3, C4, C5
        for resample in self.inputs[len(features) :]:
            pyramid.append(resample(pyramid[-1]))  # P6, P7 by max pooling
        for cell in self.cells:
            pyramid = cell(pyramid)
        return pyramid


def build_backbone(name: str) -> nn.Module:
    if name == "resnet50":
        return resnet(50, num_classes=0)
    if name == "mobilenetv2":
        return MobileNetV2()
    raise ValueError(f"unknown backbone {name!r}; use 'resnet50' or 'mobilenetv2'")


def retinanet(detector: Detector, num_classes: int = NUM_CLASSES) -> RetinaNet:
    """RetinaNet with the detector's backbone and pyramid network."""
    backbone = build_backbone(detector.backbone)
    in_channels = backbone.out_channels[-3:]
    if detector.neck == "fpn":
        neck = FPN(in_channels, detector.dims, detector.separable)
    elif detector.neck == "nasfpn":
        neck = NASFPN(in_channels, detector.dims, detector.repeats, detector.separable)
    else:
        raise ValueError(f"unknown pyramid network {detector.neck!r}; use 'fpn' or 'nasfpn'")
    return RetinaNet(backbone, neck, detector.dims, num_classes, detector.head_convs, detector.head_dims,
                     detector.separable)  # fmt: skip


def build(name: str = "nasfpn-r50-7x256-640", num_classes: int = NUM_CLASSES) -> RetinaNet:
    """The harness builder: a registered detector by model id (variants.DETECTORS)."""
    if name not in DETECTORS:
        raise ValueError(f"unknown NAS-FPN model {name!r}; known: {', '.join(DETECTORS)}")
    return retinanet(DETECTORS[name], num_classes)
