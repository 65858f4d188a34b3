"""CondConv (arXiv 1904.04971v4) registered as a harness reproduction: EfficientNet-CondConv-B0 (the authors' release)
and MobileNetV1 with CondConv, each beside its static baseline, at 224 px."""

from harness.registry import ModelSpec, Reproduction
from reproductions.condconv.variants import EFFICIENTNET_VARIANTS, MOBILENETV1_VARIANTS

REPRODUCTION = Reproduction(
    id="condconv",
    title="CondConv: Conditionally Parameterized Convolutions for Efficient Inference",
    arxiv="1904.04971v4",
    package="reproductions.condconv",
    tasks=("imagenet-1k",),
    models=tuple(
        ModelSpec(
            id=name,
            build="reproductions.condconv.model:build",
            kwargs={"variant": name},
            input_shape=(1, 3, row.resolution, row.resolution),
            test_input_shape=(2, 3, 32, 32),
            dataset="imagenet-1k",
        )
        for name, row in {**EFFICIENTNET_VARIANTS, **MOBILENETV1_VARIANTS}.items()
    ),
)
