"""Attention Augmented Convolutional Networks (arXiv 1904.09925) registered as a harness reproduction:
ResNet-34/50/101/152 and their attention-augmented versions, ImageNet classifiers at 224 px."""

from harness.registry import ModelSpec, Reproduction
from reproductions.attention_augmented.variants import IMAGE_SIZE, PAPER_DEPTHS

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


REPRODUCTION = Reproduction(
    id="attention-augmented",
    title="Attention Augmented Convolutional Networks",
    arxiv="1904.09925v1",
    package="reproductions.attention_augmented",
    tasks=("imagenet-1k",),
    models=tuple(_spec(depth, augmented) for depth in PAPER_DEPTHS for augmented in (False, True)),
)
