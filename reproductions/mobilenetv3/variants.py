"""MobileNetV3's bneck tables and model variants as data, importable without torch (the plugin registration reads them).

Rows are Tables 1 and 2 of arXiv 1905.02244v5 ("Searching for MobileNetV3"), checked against the authors' release
(tensorflow/models, research/slim/nets/mobilenet/mobilenet_v3.py: ``V3_LARGE``, ``V3_SMALL`` and the minimalistic
definitions). The release stores each expansion size as a factor of the block's input channels
(``expand_input_by_factor``); :func:`expansion_factor` recovers that factor from the table, so width multipliers
scale the expansion the way the release does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Bneck:
    """One ``bneck`` row: depthwise kernel, expansion size, output channels, squeeze-excite, nonlinearity, stride."""

    kernel: int
    exp: int
    out: int
    se: bool
    nl: str  # "RE" (ReLU) or "HS" (h-swish)
    stride: int


@dataclass(frozen=True)
class Architecture:
    """A full network: stem, bneck rows, the 1x1 conv before pooling, the pooled 1x1 conv (no BN) and activations."""

    stem: int
    stem_nl: str
    rows: tuple[Bneck, ...]
    last_conv: int
    last_conv_se: bool
    head: int
    head_nl: str


# Table 1 (MobileNetV3-Large), input 224^2 x 3.          # input of the row
LARGE = Architecture(
    stem=16,
    stem_nl="HS",
    rows=(
        Bneck(3, 16, 16, False, "RE", 1),  # 112^2 x 16
        Bneck(3, 64, 24, False, "RE", 2),  # 112^2 x 16
        Bneck(3, 72, 24, False, "RE", 1),  # 56^2 x 24
        Bneck(5, 72, 40, True, "RE", 2),  # 56^2 x 24
        Bneck(5, 120, 40, True, "RE", 1),  # 28^2 x 40
        Bneck(5, 120, 40, True, "RE", 1),  # 28^2 x 40
        Bneck(3, 240, 80, False, "HS", 2),  # 28^2 x 40
        Bneck(3, 200, 80, False, "HS", 1),  # 14^2 x 80
        Bneck(3, 184, 80, False, "HS", 1),  # 14^2 x 80
        Bneck(3, 184, 80, False, "HS", 1),  # 14^2 x 80
        Bneck(3, 480, 112, True, "HS", 1),  # 14^2 x 80
        Bneck(3, 672, 112, True, "HS", 1),  # 14^2 x 112
        Bneck(5, 672, 160, True, "HS", 2),  # 14^2 x 112
        Bneck(5, 960, 160, True, "HS", 1),  # 7^2 x 160
        Bneck(5, 960, 160, True, "HS", 1),  # 7^2 x 160
    ),
    last_conv=960,  # conv2d 1x1, 7^2 x 160 -> 960, HS
    last_conv_se=False,
    head=1280,  # pool 7x7, then conv2d 1x1 NBN -> 1280, HS
    head_nl="HS",
)

# Table 2 (MobileNetV3-Small). The paper marks SE on the last 1x1 conv (576); the release (V3_SMALL) has none there,
# and the release is what produced the reported numbers, so ``last_conv_se`` is False (see README).
SMALL = Architecture(
    stem=16,
    stem_nl="HS",
    rows=(
        Bneck(3, 16, 16, True, "RE", 2),  # 112^2 x 16
        Bneck(3, 72, 24, False, "RE", 2),  # 56^2 x 16
        Bneck(3, 88, 24, False, "RE", 1),  # 28^2 x 24
        Bneck(5, 96, 40, True, "HS", 2),  # 28^2 x 24
        Bneck(5, 240, 40, True, "HS", 1),  # 14^2 x 40
        Bneck(5, 240, 40, True, "HS", 1),  # 14^2 x 40
        Bneck(5, 120, 48, True, "HS", 1),  # 14^2 x 40
        Bneck(5, 144, 48, True, "HS", 1),  # 14^2 x 48
        Bneck(5, 288, 96, True, "HS", 2),  # 14^2 x 48
        Bneck(5, 576, 96, True, "HS", 1),  # 7^2 x 96
        Bneck(5, 576, 96, True, "HS", 1),  # 7^2 x 96
    ),
    last_conv=576,  # conv2d 1x1, 7^2 x 96 -> 576, HS (Table 2 marks SE; the release has none)
    last_conv_se=False,
    head=1024,
    head_nl="HS",
)

ARCHITECTURES: dict[str, Architecture] = {"large": LARGE, "small": SMALL}


def minimalistic(arch: Architecture) -> Architecture:
    """The release's ``*_MINIMALISTIC`` definitions: same widths, but 3x3 kernels, no SE and ReLU everywhere."""
    rows = tuple(replace(row, kernel=3, se=False, nl="RE") for row in arch.rows)
    return replace(arch, stem_nl="RE", rows=rows, last_conv_se=False, head_nl="RE")


def reduce_last_block(arch: Architecture, blocks: int) -> Architecture:
    """Halve the channels of the last ``blocks`` bnecks and of the last 1x1 conv (Section 6.4, "RF2").

    As the release's DeepLab feature extractors ``mobilenet_v3_large_seg`` / ``mobilenet_v3_small_seg`` do: the
    output channels and the expansion size of each of those blocks are halved (Large: 672 -> 336, 960 -> 480;
    Small: 288 -> 144, 576 -> 288) and so is the 1x1 conv before pooling (960 -> 480, 576 -> 288).
    """
    rows = list(arch.rows)
    for i in range(len(rows) - blocks, len(rows)):
        rows[i] = replace(rows[i], exp=rows[i].exp // 2, out=rows[i].out // 2)
    return replace(arch, rows=tuple(rows), last_conv=arch.last_conv // 2)


def expansion_factor(arch: Architecture, index: int) -> float:
    """Expansion size of row ``index`` over its input channels, the release's ``ef`` (e.g. 184 / 80 = 2.3)."""
    in_channels = arch.stem if index == 0 else arch.rows[index - 1].out
    return arch.rows[index].exp / in_channels


@dataclass(frozen=True)
class Variant:
    """A classification model: architecture name, width multiplier and whether it is the minimalistic version."""

    arch: str
    width: float
    minimalistic: bool = False
    resolution: int = 224


VARIANTS: dict[str, Variant] = {
    "large-1.0": Variant("large", 1.0),
    "large-0.75": Variant("large", 0.75),
    "small-1.0": Variant("small", 1.0),
    "small-0.75": Variant("small", 0.75),
    "large-1.0-minimalistic": Variant("large", 1.0, minimalistic=True),
    "small-1.0-minimalistic": Variant("small", 1.0, minimalistic=True),
}


@dataclass(frozen=True)
class SegVariant:
    """An LR-ASPP segmentation model (Section 6.4, Tables 7 and 8) at one Cityscapes input size."""

    arch: str
    output_stride: int = 16
    head_channels: int = 128
    height: int = 1024
    width: int = 2048


# Table 7 rows 7, 8 and 11 (full resolution 1024 x 2048), and Table 8's output strides and half-resolution inputs.
SEG_VARIANTS: dict[str, SegVariant] = {
    "large-1.0-lraspp": SegVariant("large"),
    "large-1.0-lraspp-256": SegVariant("large", head_channels=256),
    "small-1.0-lraspp": SegVariant("small"),
    "large-1.0-lraspp-os32": SegVariant("large", output_stride=32),
    "small-1.0-lraspp-os32": SegVariant("small", output_stride=32),
    "large-1.0-lraspp-512x1024": SegVariant("large", height=512, width=1024),
    "small-1.0-lraspp-512x1024": SegVariant("small", height=512, width=1024),
    "large-1.0-lraspp-os32-512x1024": SegVariant("large", output_stride=32, height=512, width=1024),
    "small-1.0-lraspp-os32-512x1024": SegVariant("small", output_stride=32, height=512, width=1024),
}
CITYSCAPES_CLASSES = 19
# The LR-ASPP pool is sized from the training crop: the release's image_pooling_crop_size=769,769 gives
# scale_dimension(769, 1 / output_stride) = (769 - 1) // output_stride + 1 = 49 at output stride 16, 25 at 32.
POOLING_CROP = 769
# Bneck (0-based row) whose depthwise output is the 1/8 low-level feature of LR-ASPP: the release's DeepLab decoder end
# points 'layer_7/depthwise_output' (Large: the 3rd 40-channel block, 120 channels) and 'layer_4/depthwise_output'
# (Small: the 88-channel block); layer_1 is the stem.
LOW_LEVEL_BLOCK = {"large": 5, "small": 2}


def reduce_for_detection(arch: Architecture, blocks: int) -> Architecture:
    """Halve the output channels of the last ``blocks`` bnecks and of the last 1x1 conv (Section 6.3, Table 6 "†").

    As the release's ``V3_LARGE_DETECTION`` / ``V3_SMALL_DETECTION`` (``_reduce_consecutive_layers`` over conv defs
    13-16 / 9-12): only ``num_outputs`` is halved. Expansions stay the row's factor of the block's *input*
    (``expand_input_by_factor``), so the first reduced block keeps its expansion (Large 672, Small 288) and the
    later ones follow their halved inputs (Large 960 -> 480, Small 576 -> 288); the DeepLab ``*_seg`` extractors
    (:func:`reduce_last_block`) halve the first expansion too.
    """
    rows = list(arch.rows)
    for i in range(len(rows) - blocks, len(rows)):
        in_channels = arch.stem if i == 0 else rows[i - 1].out  # already reduced when i - 1 was
        rows[i] = replace(rows[i], exp=round(expansion_factor(arch, i) * in_channels), out=rows[i].out // 2)
    return replace(arch, rows=tuple(rows), last_conv=arch.last_conv // 2)


@dataclass(frozen=True)
class DetVariant:
    """An SSDLite detector (Section 6.3, Table 6): backbone, whether the blocks between C4 and C5 are halved."""

    arch: str
    reduced: bool = False
    image_size: int = 320  # fixed_shape_resizer 320 x 320 of the release's ssdlite_mobilenet_v3_*_320x320_coco


# Table 6 rows "V3", "V3 †", "V3-Small", "V3-Small †".
DET_VARIANTS: dict[str, DetVariant] = {
    "large-1.0-ssdlite": DetVariant("large"),
    "large-1.0-ssdlite-reduced": DetVariant("large", reduced=True),
    "small-1.0-ssdlite": DetVariant("small"),
    "small-1.0-ssdlite-reduced": DetVariant("small", reduced=True),
}
# Bneck (0-based row) whose expansion output is C4, "the expansion layer of the 13-th [Large] / 9-th [Small]
# bottleneck block" (Section 6.3); the release's 'layer_14/expansion_output' / 'layer_10/expansion_output'
# (layer_1 is the stem). C5 is the 1x1 conv before pooling ('layer_17' / 'layer_13').
C4_BLOCK = {"large": 12, "small": 8}
# Bnecks halved by the "†" models: C4's block and every later one (release conv defs 13-15 / 9-11), plus the 1x1 conv.
DETECTION_REDUCED_BLOCKS = 3
COCO_CLASS_SLOTS = 91  # 90 COCO classes + the background slot of the release's box predictor (index = category id)
