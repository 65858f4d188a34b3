"""NAS-FPN's discovered pyramid cell and the detectors built with it, as data (importable without torch).

``NASFPN_BLOCK_SPECS`` is the architecture found by the search of "NAS-FPN: Learning Scalable Feature Pyramid
Architecture for Object Detection" (Ghiasi, Lin & Le, CVPR 2019, arXiv 1904.07392), exactly as the authors' code
lists it (tensorflow/tpu models/official/detection/modeling/architecture/nasfpn.py, ``NASFPN_BLOCK_SPECS``).
A cell starts from the five pyramid features P3..P7 (indices 0..4) and adds one node per merging cell, in order
(indices 5, 6, ...): ``(output level, binary op, (input index 0, input index 1), is_output)``. The five nodes
marked ``is_output`` (levels 3, 4, 5, 7, 6) are the cell's new P3..P7, which the next cell takes as input.

``DETECTORS`` are the RetinaNet models registered by this reproduction: backbone, pyramid network (``"fpn"`` or
``"nasfpn"``), number of stacked cells ``N`` and feature dimension ``D`` (the paper's "N @ D"), input size.
"""

from __future__ import annotations

from dataclasses import dataclass

# (block level, combine op, (input offset 0, input offset 1), is_output): the official NASFPN_BLOCK_SPECS.
NASFPN_BLOCK_SPECS: tuple[tuple[int, str, tuple[int, int], bool], ...] = (
    (4, "attention", (1, 3), False),  # GP(P4, P6) -> P4
    (4, "sum", (1, 5), False),  # SUM(P4, node5) -> P4
    (3, "sum", (0, 6), True),  # SUM(P3, node6) -> P3 output
    (4, "sum", (6, 7), True),  # SUM(node6, node7) -> P4 output
    (5, "attention", (7, 8), True),  # GP(node7, node8) -> P5 output
    (7, "attention", (6, 9), True),  # GP(node6, node9) -> P7 output
    (6, "attention", (9, 10), True),  # GP(node9, node10) -> P6 output
)


@dataclass(frozen=True)
class Detector:
    """One RetinaNet: backbone, pyramid network with ``repeats`` cells of ``dims`` channels, input size."""

    backbone: str  # "resnet50" or "mobilenetv2"
    neck: str  # "fpn" or "nasfpn"
    repeats: int
    dims: int
    image_size: int
    separable: bool = False  # NAS-FPNLite: separable 3x3 convolutions in the pyramid network and the heads
    head_convs: int = 4
    head_dims: int | None = None  # default: dims


DETECTORS: dict[str, Detector] = {
    "retinanet-r50-fpn-640": Detector("resnet50", "fpn", 1, 256, 640),
    "nasfpn-r50-5x256-640": Detector("resnet50", "nasfpn", 5, 256, 640),
    "nasfpn-r50-7x256-640": Detector("resnet50", "nasfpn", 7, 256, 640),
    "nasfpn-r50-7x256-1024": Detector("resnet50", "nasfpn", 7, 256, 1024),
    "nasfpn-r50-7x384-1280": Detector("resnet50", "nasfpn", 7, 384, 1280),
    "nasfpnlite-mobilenetv2-3x48-320": Detector("mobilenetv2", "nasfpn", 3, 48, 320, separable=True),
    "nasfpnlite-mobilenetv2-7x64-320": Detector("mobilenetv2", "nasfpn", 7, 64, 320, separable=True),
}

# The RetinaNet's anchors, matching and losses are the official detection code's (nets.retinanet).
NUM_CLASSES = 91  # COCO category ids 1..90 plus the unused index 0, as the official code counts them
