"""NAS-FPN (arXiv 1904.07392) registered as a harness reproduction: RetinaNet detectors with the discovered
feature pyramid network (and the FPN baseline) on ResNet-50 and MobileNetV2, at their COCO input sizes."""

from harness.registry import ModelSpec, Reproduction
from reproductions.nas_fpn.variants import DETECTORS

REPRODUCTION = Reproduction(
    id="nas-fpn",
    title="NAS-FPN: Learning Scalable Feature Pyramid Architecture for Object Detection",
    arxiv="1904.07392v1",
    package="reproductions.nas_fpn",
    tasks=("coco-detection",),
    models=tuple(
        ModelSpec(
            id=name,
            build="reproductions.nas_fpn.model:build",
            kwargs={"name": name},
            input_shape=(1, 3, row.image_size, row.image_size),
            test_input_shape=(2, 3, 64, 64),
            dataset="coco-2017",
        )
        for name, row in DETECTORS.items()
    ),
    unbuilt_models=("nasfpn-amoebanet", "ssdlite-mobilenetv2"),  # reported, not built (claims stay not-run)
    metrics=("latency_ms",),  # the model zoo's V100 latency: claimed, recorded by no run here
)
