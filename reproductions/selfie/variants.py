"""Selfie's networks and pretext-task settings as data, importable without torch.

``NETWORKS`` maps each registered model id to the ResNet it fine-tunes (depth, stem, width) and whether it is
pre-trained with Selfie (``selfie-*``) or trained on the labels alone (``supervised-*``, the paper's baseline).
``PRETEXT`` gives the patch grid and the number of masked patches per input size. The paper's exact grid, masking
ratio and attention-pooling depth could not be re-checked while writing this reproduction (README.md); the values
here are this reproduction's choices, all of them configuration.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Network:
    depth: int  # ResNet depth (a key of nets.specs.RESNETS)
    stem: str  # "imagenet" (7x7/2 + max pool) or "cifar" (3x3/1)
    image_size: int
    selfie: bool
    width: int = 64


@dataclass(frozen=True)
class Pretext:
    grid: int  # the image is cut into grid x grid non-overlapping patches
    masked: int  # patches masked out per image; each is the answer among the masked ones (the distractors)
    pooling_layers: int = 3  # Transformer layers of the attention pooling network
    pooling_heads: int = 8


NETWORKS: dict[str, Network] = {
    "selfie-resnet50": Network(50, "imagenet", 224, True),
    "supervised-resnet50": Network(50, "imagenet", 224, False),
    "selfie-resnet50-32": Network(50, "cifar", 32, True),
    "supervised-resnet50-32": Network(50, "cifar", 32, False),
    # budget tier: a narrow ResNet-18 layout on 32 px digits / Fashion-MNIST, minutes on a CPU
    "selfie-resnet18-w16": Network(18, "cifar", 32, True, width=16),
    "supervised-resnet18-w16": Network(18, "cifar", 32, False, width=16),
}

PRETEXT: dict[int, Pretext] = {
    224: Pretext(grid=7, masked=12),  # 32 px patches
    32: Pretext(grid=4, masked=4),  # 8 px patches
}
