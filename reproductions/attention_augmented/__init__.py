"""Attention Augmented Convolutional Networks (arXiv 1904.09925) registered as a harness reproduction:
ResNet-34/50/101/152 and their attention-augmented versions (ImageNet classifiers at 224 px), the RetinaNets of the
COCO table with ResNet-50/101 and AA-ResNet-50/101 backbones (640 px), and the budget tier's small pair
(Fashion-MNIST, 28 px)."""

from harness.registry import ModelSpec, Reproduction
from reproductions.attention_augmented.variants import BUDGET, DETECTORS, IMAGE_SIZE, PAPER_DEPTHS

BUILD = "reproductions.attention_augmented.model:build"


def _spec(depth: int, augmented: bool) -> ModelSpec:
    return ModelSpec(
        id=f"{'aa-' if augmented else ''}resnet{depth}",
        build=BUILD,
        kwargs={"depth": depth, "augmented": augmented},
        input_shape=(1, 3, IMAGE_SIZE, IMAGE_SIZE),
        test_input_shape=(2, 3, 32, 32),
        dataset="imagenet-1k",
    )


def _detector(name: str) -> ModelSpec:
    size = DETECTORS[name].image_size
    return ModelSpec(
        id=name,
        build="reproductions.attention_augmented.model:build_detector",
        kwargs={"name": name},
        input_shape=(1, 3, size, size),
        test_input_shape=(2, 3, 128, 128),
        dataset="coco-2017",
    )


def _budget(name: str) -> ModelSpec:
    row = BUDGET[name]
    return ModelSpec(
        id=name,
        build="reproductions.attention_augmented.model:build_budget",
        kwargs={"name": name},
        input_shape=(1, row.in_channels, row.image_size, row.image_size),
        dataset="fashion-mnist",
    )


REPRODUCTION = Reproduction(
    id="attention-augmented",
    title="Attention Augmented Convolutional Networks",
    arxiv="1904.09925v1",
    package="reproductions.attention_augmented",
    tasks=("imagenet-1k", "coco-detection", "fashion-mnist"),
    models=(
        *(_spec(depth, augmented) for depth in PAPER_DEPTHS for augmented in (False, True)),
        *(_detector(name) for name in DETECTORS),
        *(_budget(name) for name in BUDGET),
    ),
)
