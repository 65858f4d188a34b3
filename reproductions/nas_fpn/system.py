"""Lightning system for RetinaNet with NAS-FPN or FPN (arXiv 1904.07392) on COCO-format batches.

Recipe of the authors' code (tensorflow/tpu models/official/detection: ``configs/base_config.py``,
``configs/retinanet_config.py``, ``configs/yaml/retinanet_nasfpn.yaml``):

- input: the long side resized to ``image_size`` and the image padded to a square (``image_size`` x ``image_size``);
  training draws a random scale in [0.8, 1.2] (the NAS-FPN yaml's ``aug_scale_min/max``) before cropping a random
  ``image_size`` window; horizontal flips come from the data module; pixels normalised by the ImageNet mean / std;
- SGD with momentum 0.9, batch 64, learning rate 0.08 (scaled linearly with the global batch) after a linear
  warm-up from 0.0067 over 500 steps, x0.1 at 60k and 80k of 90k steps (here: at 2/3 and 8/9 of the run);
- L2 weight decay 1e-4 on every weight except batch-norm parameters and biases; batch norm momentum 0.997 and
  epsilon 1e-4 (PyTorch ``momentum=0.003``);
- loss and post-processing as in :mod:`nets.retinanet`.

The loop itself is :class:`nets.systems.retinanet.RetinaNetSteps`, shared with Attention Augmentation's COCO
RetinaNets; this module builds NAS-FPN's detectors and sets the defaults above.

Batches are ``(list of (3, H, W) float images in [0, 1], list of targets)`` from
:class:`tasks.coco.data.CocoDetectionDataModule` (boxes ``[x1, y1, x2, y2]`` pixels, labels = COCO category ids).
Test metrics are COCO box AP from pycocotools (:class:`tasks.coco.steps.CocoTestSteps`), logged under the
harness metric names ``ap``, ``ap50``, ``ap75``, ``aps``, ``apm``, ``apl`` (percent).
"""

from __future__ import annotations

import pytorch_lightning as pl

from harness.registry import model_variant
from nets.systems.retinanet import RetinaNetSteps
from reproductions.nas_fpn.model import build
from reproductions.nas_fpn.variants import DETECTORS, NUM_CLASSES
from tasks.coco.steps import CocoTestSteps


def parse_model(model: str) -> str:
    return model_variant(model, DETECTORS, "NAS-FPN")


class RetinaNetSystem(RetinaNetSteps, CocoTestSteps, pl.LightningModule):
    """RetinaNet + NAS-FPN / FPN trained with the official detection recipe and scored by pycocotools."""

    def __init__(
        self,
        model: str = "nasfpn-r50-7x256-640",
        num_classes: int = NUM_CLASSES,
        image_size: int | None = None,
        lr: float = 0.08,
        lr_batch_size: int = 64,
        warmup_lr: float = 0.0067,
        warmup_steps: int = 500,
        momentum: float = 0.9,
        weight_decay: float = 1e-4,
        scale_min: float = 0.8,
        scale_max: float = 1.2,
        bn_momentum: float = 0.003,
        bn_eps: float = 1e-4,
        checkpoint: str | None = None,
    ) -> None:
        """``image_size``: the square input (the detector's own by default); ``checkpoint``: weights to load."""
        super().__init__()
        self.save_hyperparameters()
        size = image_size or DETECTORS[parse_model(model)].image_size
        self.init_detector(build(model, num_classes), size, bn_momentum, bn_eps, checkpoint)
