"""The training and test loop of a RetinaNet on COCO-format batches, as the authors' TPU detection code runs it
(tensorflow/tpu models/official/detection: ``configs/base_config.py``, ``configs/retinanet_config.py``), shared by
NAS-FPN's detectors and Attention Augmentation's COCO RetinaNets:

- input: the long side resized to ``image_size`` and the image padded to a square (``image_size`` x ``image_size``);
  training draws a random scale in [``scale_min``, ``scale_max``] before cropping a random ``image_size`` window;
  horizontal flips come from the data module; pixels normalised by the ImageNet mean / std;
- SGD with momentum, learning rate ``lr`` per ``lr_batch_size`` images scaled linearly with the global batch, after
  a linear warm-up from ``warmup_lr`` over ``warmup_steps`` steps, x0.1 at 60k and 80k of 90k steps (here: at 2/3
  and 8/9 of the run);
- L2 weight decay on every weight except batch-norm parameters and biases;
- anchors, matching, loss and post-processing of :mod:`nets.retinanet`.

A system mixes :class:`RetinaNetSteps` in ahead of ``CocoTestSteps`` and ``pl.LightningModule`` and calls
:meth:`RetinaNetSteps.init_detector` from its ``__init__``; its hyper-parameters carry ``num_classes``, ``lr``,
``lr_batch_size``, ``warmup_lr``, ``warmup_steps``, ``momentum``, ``weight_decay``, ``scale_min`` and ``scale_max``.
Batches are ``(list of (3, H, W) float images in [0, 1], list of targets)`` from
:class:`tasks.coco.data.CocoDetectionDataModule` (boxes ``[x1, y1, x2, y2]`` pixels, labels = COCO category ids);
the test steps and metrics are the task's: pycocotools' box AP (:class:`tasks.coco.steps.CocoTestSteps`, mixed in
after :class:`RetinaNetSteps`, which gives it ``detect``).
"""

from __future__ import annotations

import random
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from nets.layers import set_bn
from nets.retinanet import generate_anchors, match_anchors, postprocess, retinanet_loss
from nets.systems.steps import global_batch, to_image_pixels
from nets.weights import load_state

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
DECAY_POINTS = (60_000 / 90_000, 80_000 / 90_000)


def resize_and_pad(
    image: torch.Tensor, boxes: torch.Tensor, size: int, scale_jitter: tuple[float, float] | None = None
) -> tuple[torch.Tensor, torch.Tensor, float, tuple[int, int]]:
    """Resize so the long side is ``size`` (times a random jitter), crop/pad to ``size`` x ``size``.

    Returns the ``(3, size, size)`` image, the boxes in its pixels (clipped to it), the scale applied, and the
    ``(y, x)`` offset of the crop (0 when no jitter).
    """
    _, height, width = image.shape
    scale = size / max(height, width)
    if scale_jitter is not None:
        scale *= random.uniform(*scale_jitter)
    new_h, new_w = max(1, round(height * scale)), max(1, round(width * scale))
    resized = F.interpolate(image[None], size=(new_h, new_w), mode="bilinear", align_corners=False)[0]
    top = random.randint(0, max(0, new_h - size)) if scale_jitter is not None else 0
    left = random.randint(0, max(0, new_w - size)) if scale_jitter is not None else 0
    crop = resized[:, top : top + size, left : left + size]
    out = image.new_zeros(3, size, size)
    out[:, : crop.shape[1], : crop.shape[2]] = crop
    shifted = boxes * scale - boxes.new_tensor([left, top, left, top])  # (M, 4) x1, y1, x2, y2
    shifted[:, 0::2] = shifted[:, 0::2].clamp(0, crop.shape[2])
    shifted[:, 1::2] = shifted[:, 1::2].clamp(0, crop.shape[1])
    return out, shifted, scale, (top, left)


def normalize(images: torch.Tensor) -> torch.Tensor:
    mean = images.new_tensor(MEAN)[:, None, None]
    std = images.new_tensor(STD)[:, None, None]
    return (images - mean) / std


class RetinaNetSteps:
    """RetinaNet training (matching + focal / Huber loss), detection for testing and the SGD recipe of the TPU
    detection code."""

    def init_detector(
        self,
        model: nn.Module,
        image_size: int,
        bn_momentum: float,
        bn_eps: float,
        checkpoint: str | Path | None = None,
    ) -> None:
        """Take ``model`` with the TF batch-norm settings, load ``checkpoint`` if given, make the anchors of a square
        ``image_size`` input."""
        self.image_size = image_size
        self.model = model
        set_bn(self.model, bn_momentum, bn_eps)
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        self.register_buffer("anchors", generate_anchors((self.image_size, self.image_size)), persistent=False)
        self.test_metrics = nn.ModuleList()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, S, S) -> (N, A, C + 4)

    def _prepare(self, images: list[torch.Tensor], targets: list[dict], train: bool):
        jitter = (self.hparams.scale_min, self.hparams.scale_max) if train else None
        batch, boxes, scales = [], [], []
        for image, target in zip(images, targets, strict=True):
            out, b, scale, _ = resize_and_pad(image, target["boxes"].float(), self.image_size, jitter)
            batch.append(out)
            boxes.append(b)
            scales.append(scale)
        return normalize(torch.stack(batch)), boxes, scales

    def training_step(self, batch: tuple[list[torch.Tensor], list[dict]], batch_idx: int) -> torch.Tensor:
        images, targets = batch
        inputs, boxes, _ = self._prepare(images, targets, train=True)
        class_targets, box_targets = [], []
        for b, target in zip(boxes, targets, strict=True):
            valid = (b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])  # boxes cropped away are dropped
            crowd = target.get("iscrowd", torch.zeros_like(target["labels"]))[valid]
            cls, reg = match_anchors(self.anchors, b[valid], target["labels"][valid], crowd)
            class_targets.append(cls)
            box_targets.append(reg)
        outputs = self(inputs)
        num_classes = self.hparams.num_classes
        loss, class_loss, box_loss = retinanet_loss(
            outputs[..., :num_classes], outputs[..., num_classes:], torch.stack(class_targets),
            torch.stack(box_targets), num_classes,
        )  # fmt: skip
        self.log_dict({"train/loss": loss, "train/class_loss": class_loss, "train/box_loss": box_loss}, prog_bar=True)
        return loss

    def detect(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """Detections in each image's own pixel coordinates."""
        dummy = [{"boxes": torch.zeros(0, 4, device=self.device)} for _ in images]
        inputs, _, scales = self._prepare(images, dummy, train=False)
        outputs = self(inputs)
        num_classes = self.hparams.num_classes
        detections = postprocess(outputs[..., :num_classes], outputs[..., num_classes:], self.anchors)
        return to_image_pixels(detections, images, scales)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        _, batch = global_batch(self.trainer)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        peak = hp.lr * batch / hp.lr_batch_size
        decayed, plain = [], []
        for module in self.model.modules():
            for name, p in module.named_parameters(recurse=False):
                (plain if isinstance(module, nn.BatchNorm2d) or name == "bias" else decayed).append(p)
        groups = [{"params": decayed, "weight_decay": hp.weight_decay}, {"params": plain, "weight_decay": 0.0}]
        optimizer = torch.optim.SGD(groups, lr=peak, momentum=hp.momentum)
        warmup_start = min(hp.warmup_lr * batch / hp.lr_batch_size, peak) / peak

        def factor(step: int) -> float:
            if step < hp.warmup_steps:
                return warmup_start + (1 - warmup_start) * step / hp.warmup_steps
            return 0.1 ** sum(step >= point * total for point in DECAY_POINTS)

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
