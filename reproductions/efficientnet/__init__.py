"""EfficientNet (arXiv 1905.11946v5) registered as a harness reproduction: B0-B7 at their own resolutions."""

from harness.registry import ModelSpec, Reproduction
from reproductions.efficientnet.variants import VARIANTS

REPRODUCTION = Reproduction(
    id="efficientnet",
    title="EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks",
    arxiv="1905.11946v5",
    package="reproductions.efficientnet",
    tasks=("imagenet-1k",),
    models=tuple(
        ModelSpec(
            id=f"efficientnet-{name}",
            build="reproductions.efficientnet.model:efficientnet",
            kwargs={"variant": name},
            input_shape=(1, 3, row.resolution, row.resolution),
            test_input_shape=(2, 3, 64, 64),
            dataset="imagenet-1k",
        )
        for name, row in VARIANTS.items()
    ),
)
