"""Attention-augmentation settings of the ResNets as data, importable without torch.

The ResNet block tables themselves (He et al., arXiv 1512.03385, Table 1) are :data:`nets.specs.RESNETS`.

``AUGMENTATION`` is how "Attention Augmented Convolutional Networks" (arXiv 1904.09925) augments each ResNet on
ImageNet (see model.py for where each number comes from and which of them the paper's parameter counts pin down):
the first spatial convolution of every residual block of the last three stages is an attention-augmented
convolution with ``Nh = 8`` heads, ``kappa = dk / Fout`` and ``upsilon = dv / Fout`` (``kappa = 2 upsilon = 0.2``;
ResNet-34 uses ``kappa = upsilon = 0.25``), at least 20 key dimensions per head, and the self-attention of the
first of those stages (28 x 28) runs on a 2x average-pooled input.

``DETECTORS`` are the COCO RetinaNets of the paper's detection table: the ResNet-50/101 or AA-ResNet-50/101 backbone
(augmented exactly as on ImageNet, since the detector starts from the ImageNet-trained backbone) under the RetinaNet
of :mod:`nets.retinanet` (FPN P3..P7 of 256 channels, 4-conv class and box nets, 9 anchors), at 640 x 640.

``BUDGET`` is the small-scale pair of the budget tier: a ResNet-10 layout (one basic block per stage, widths 16..128,
3x3 stride-1 stem) on 28 x 28 Fashion-MNIST, plain or with the first conv of each block of the last three stages
attention-augmented (``kappa = upsilon = 0.25`` as for the paper's basic-block ResNet-34; 4 heads and no key minimum
since the layers are only 32..128 channels wide; as in the paper, the first augmented stage, 14 x 14 here, attends
over a 2x average-pooled input).
"""

from __future__ import annotations

from dataclasses import dataclass

from nets.specs import ResNetSpec


@dataclass(frozen=True)
class Augmentation:
    """Where and how wide the self-attention is.

    ``stages`` are 0-based indices of conv2_x..conv5_x; ``downsample_stages`` run their self-attention on a
    3x3 / stride-2 average-pooled input and upsample the result bilinearly before the concatenation.
    """

    kappa: float
    upsilon: float
    heads: int = 8
    min_key_dims_per_head: int = 20
    stages: tuple[int, ...] = (1, 2, 3)
    downsample_stages: tuple[int, ...] = (1,)


AUGMENTATION: dict[int, Augmentation] = {
    34: Augmentation(kappa=0.25, upsilon=0.25),
    50: Augmentation(kappa=0.2, upsilon=0.1),
    101: Augmentation(kappa=0.2, upsilon=0.1),
    152: Augmentation(kappa=0.2, upsilon=0.1),
}

PAPER_DEPTHS = (34, 50, 101, 152)  # the ResNets of the paper's ImageNet ResNet table
IMAGE_SIZE = 224


@dataclass(frozen=True)
class Detector:
    """A RetinaNet of the paper's COCO table: backbone depth, attention augmentation, square input size."""

    depth: int
    augmented: bool
    image_size: int = 640


DETECTORS: dict[str, Detector] = {
    f"retinanet-{'aa-' if augmented else ''}resnet{depth}": Detector(depth, augmented)
    for depth in (50, 101)
    for augmented in (False, True)
}
DETECTION_NUM_CLASSES = 91  # COCO category ids 1..90 plus the unused 0, as nets.retinanet counts them


@dataclass(frozen=True)
class BudgetNet:
    """The budget tier's small classifier: ResNet layout, stem width, input channels and size, augmentation."""

    spec: ResNetSpec
    width: int
    in_channels: int
    image_size: int
    augmentation: Augmentation | None


BUDGET_AUGMENTATION = Augmentation(kappa=0.25, upsilon=0.25, heads=4, min_key_dims_per_head=0)
BUDGET: dict[str, BudgetNet] = {
    "resnet10-w16": BudgetNet(ResNetSpec("basic", (1, 1, 1, 1)), 16, 1, 28, None),
    "aa-resnet10-w16": BudgetNet(ResNetSpec("basic", (1, 1, 1, 1)), 16, 1, 28, BUDGET_AUGMENTATION),
}
