"""Lightning system for the COCO RetinaNets of arXiv 1904.09925 (ResNet-50/101 and AA-ResNet-50/101 backbones).

The paper's detection experiments use RetinaNet "with a ResNet-50 and ResNet-101 backbone" and augment only the
backbone, as in its ImageNet experiments. The detector, its loss, matching, post-processing and training steps
are the shared RetinaNet loop of :class:`nets.systems.retinanet.RetinaNetSteps` (the authors' TPU detection code,
as NAS-FPN's detectors use it), its pycocotools scoring :class:`tasks.coco.steps.CocoTestSteps`; this module only
builds the paper's four detectors and starts their backbone from ImageNet-trained (AA-)ResNet weights, as the TPU
RetinaNet does (``resnet_checkpoint``).

The recipe (configs/full.yaml) is the TPU RetinaNet's default 1x schedule at 640 x 640 (tensorflow/tpu
models/official/retinanet: batch 64, lr 0.08 with a linear warm-up, x0.1 at 2/3 and 8/9 of 12 epochs, random
horizontal flips, no scale jitter); the paper's own detection schedule was not read (README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytorch_lightning as pl
from torch import nn

from harness.errors import HarnessError
from harness.registry import model_variant
from nets.systems.retinanet import RetinaNetSteps
from nets.weights import read_state
from reproductions.attention_augmented.model import build_detector, relative_offsets_table
from reproductions.attention_augmented.variants import DETECTION_NUM_CLASSES, DETECTORS
from tasks.coco.steps import CocoTestSteps

CLASSIFIER_PREFIX = "fc."
RELATIVE_TABLES = ("rel_height", "rel_width")


def parse_detector(model: str) -> str:
    return model_variant(model, DETECTORS, "attention-augmented detector")


def load_backbone(backbone: nn.Module, path: str | Path) -> None:
    """Start ``backbone`` from ImageNet-trained weights of the same (AA-)ResNet, classifier left out.

    Relative-position tables trained for 224 px maps are resized to the detector's larger maps by the linear
    interpolation :func:`relative_offsets_table` applies to maps larger than a table (not from the paper).
    """
    state = {k: v for k, v in read_state(path).items() if not k.startswith(CLASSIFIER_PREFIX)}
    own = backbone.state_dict()
    for key, value in state.items():
        if key.rsplit(".", 1)[-1] in RELATIVE_TABLES and key in own and value.shape != own[key].shape:
            state[key] = relative_offsets_table(value, (own[key].shape[0] + 1) // 2)
    missing, unexpected = sorted(own.keys() - state.keys()), sorted(state.keys() - own.keys())
    if missing or unexpected:
        raise HarnessError(
            f"{path}: ImageNet weights do not fit the backbone: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    try:
        backbone.load_state_dict(state)
    except RuntimeError as exc:
        raise HarnessError(f"{path}: ImageNet weights do not fit the backbone: {exc}") from exc


class AARetinaNetSystem(RetinaNetSteps, CocoTestSteps, pl.LightningModule):
    """RetinaNet with a ResNet or AA-ResNet backbone; training, testing and optimisation as NAS-FPN's detectors."""

    def __init__(
        self,
        model: str = "retinanet-aa-resnet50",
        num_classes: int = DETECTION_NUM_CLASSES,
        image_size: int | None = None,
        lr: float = 0.08,
        lr_batch_size: int = 64,
        warmup_lr: float = 0.0067,
        warmup_steps: int = 500,
        momentum: float = 0.9,
        weight_decay: float = 1e-4,
        scale_min: float = 1.0,
        scale_max: float = 1.0,
        bn_momentum: float = 0.003,
        bn_eps: float = 1e-4,
        checkpoint: str | None = None,
        init_checkpoint: str | None = None,
    ) -> None:
        """``checkpoint``: weights of the whole detector (evaluation); ``init_checkpoint``: ImageNet weights of its
        backbone (training); ``image_size``: the square input, 640 by default."""
        super().__init__()
        self.save_hyperparameters()
        if checkpoint is not None and init_checkpoint is not None:
            raise HarnessError("give checkpoint (a trained detector) or init_checkpoint (its backbone), not both")
        size = image_size or DETECTORS[parse_detector(model)].image_size
        detector = build_detector(parse_detector(model), num_classes)
        if init_checkpoint is not None:
            load_backbone(detector.backbone, init_checkpoint)
        self.init_detector(detector, size, bn_momentum, bn_eps, checkpoint)
