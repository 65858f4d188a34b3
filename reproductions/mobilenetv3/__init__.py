"""MobileNetV3 (arXiv 1905.02244v5) registered as a harness reproduction: Large / Small classifiers at 224 px, the
LR-ASPP segmentation models at the Cityscapes sizes of Tables 7 and 8, and the SSDLite COCO detectors of Table 6 at
320 px."""

from harness.protocols import Protocol
from harness.registry import ModelSpec, Reproduction
from reproductions.mobilenetv3.variants import DET_VARIANTS, SEG_VARIANTS, VARIANTS

REPRODUCTION = Reproduction(
    id="mobilenetv3",
    title="Searching for MobileNetV3",
    arxiv="1905.02244v5",
    package="reproductions.mobilenetv3",
    tasks=("imagenet-1k", "cityscapes-semantic", "coco-detection"),
    models=tuple(
        ModelSpec(
            id=f"mobilenetv3-{name}",
            build="reproductions.mobilenetv3.model:mobilenetv3",
            kwargs={"variant": name},
            input_shape=(1, 3, row.resolution, row.resolution),
            test_input_shape=(2, 3, 64, 64),
            dataset="imagenet-1k",
        )
        for name, row in VARIANTS.items()
    )
    + tuple(
        ModelSpec(
            id=f"mobilenetv3-{name}",
            build="reproductions.mobilenetv3.model:lraspp",
            kwargs={"variant": name},
            input_shape=(1, 3, row.height, row.width),
            test_input_shape=(2, 3, 64, 128),
            dataset="cityscapes",
        )
        for name, row in SEG_VARIANTS.items()
    )
    + tuple(
        ModelSpec(
            id=f"mobilenetv3-{name}",
            build="reproductions.mobilenetv3.ssdlite:ssdlite",
            kwargs={"variant": name},
            input_shape=(1, 3, row.image_size, row.image_size),
            test_input_shape=(2, 3, 64, 64),
            dataset="coco-2017",
        )
        for name, row in DET_VARIANTS.items()
    ),
    metrics=("latency_ms",),  # Table 3's Pixel-phone latency: claimed, recorded by no run here
    protocols=(
        Protocol(
            "ssdlite-320",
            "SSDLite detection: images resized to a fixed 320x320, COCO box AP by pycocotools",
        ),
    ),
)
