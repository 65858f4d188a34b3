"""EfficientNet (arXiv 1905.11946v5) registered as a harness reproduction: B0-B7 at their own resolutions."""

from harness.protocols import Protocol
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
    # Table 3's scaled baselines and Table 5's transfer datasets without a data module: reported, not built
    unbuilt_models=tuple(
        f"{net}-{scaling}"
        for net in ("mobilenetv1", "mobilenetv2", "resnet50")
        for scaling in ("d4", "w2", "r2", "compound")
    ),
    unbuilt_datasets=("birdsnap", "stanford-cars", "flowers-102", "fgvc-aircraft"),
    protocols=(
        Protocol(
            "fine-tuned from ImageNet checkpoint",
            "transfer (Table 5): the ImageNet-trained network fine-tuned on the target dataset and scored once on"
            " its test split with the final weights, one centre crop per image",
        ),
    ),
)
