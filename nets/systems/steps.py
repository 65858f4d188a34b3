"""The training steps and optimiser helpers several systems share, apart from how they are scored (the validation
and test steps with their metrics are the tasks': :class:`tasks.imagenet.steps.AccuracySteps`,
:class:`tasks.coco.steps.CocoTestSteps`).

- :class:`ClassifierSteps`: label-smoothed cross-entropy training on ``(float (N, 3, S, S) images, long (N,)
  labels)`` batches, with a check that the data arrives at the resolution the model is built for. A system mixes it
  in ahead of the task's evaluation steps and ``pl.LightningModule``
  (``class S(ClassifierSteps, AccuracySteps, pl.LightningModule)``), sets ``self.image_size``, and its
  hyper-parameters carry ``model`` and ``label_smoothing``.
- :func:`l2_param_groups`, :func:`global_batch`: the official TF recipes' L2 and the learning rate given per a
  reference batch size.
- :func:`to_image_pixels`: detections on the resized network input back in each image's own pixels.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError


def l2_param_groups(module: nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on every parameter except batch-norm scale and offset (the official TF recipes' L2)."""
    bn = {id(p) for m in module.modules() if isinstance(m, nn.BatchNorm2d) for p in m.parameters()}
    decayed = [p for p in module.parameters() if id(p) not in bn]
    plain = [p for p in module.parameters() if id(p) in bn]
    return [{"params": decayed, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def global_batch(trainer: pl.Trainer) -> tuple[float, int]:
    """Optimizer steps per epoch and the global batch (per-device batch x devices x accumulation), for learning
    rates given per a reference batch size. Loads the train loader now, as Lightning's estimated_stepping_batches
    does."""
    trainer.fit_loop.setup_data()
    steps_per_epoch = max(1.0, trainer.num_training_batches / trainer.accumulate_grad_batches)
    loader = trainer.train_dataloader
    # a loader of whole batches (``sampler=BatchSampler(...)``, ``batch_size=None``) states its size on its sampler
    batch_size = getattr(loader, "batch_size", None) or getattr(getattr(loader, "sampler", None), "batch_size", None)
    if not batch_size:
        raise HarnessError("the learning rate is scaled by the batch size: the train loader has none")
    return steps_per_epoch, batch_size * trainer.world_size * trainer.accumulate_grad_batches


def to_image_pixels(
    detections: list[dict[str, torch.Tensor]], images: list[torch.Tensor], scales: list[float | tuple[float, float]]
) -> list[dict[str, torch.Tensor]]:
    """Detections on the resized network input back in each image's own pixels: boxes divided by the resize scale
    (one factor, or ``(sx, sy)`` for a resize that does not keep the aspect ratio) and clipped to the image."""
    for det, image, scale in zip(detections, images, scales, strict=True):
        height, width = image.shape[-2:]
        sx, sy = scale if isinstance(scale, tuple) else (scale, scale)
        det["boxes"] = det["boxes"] / det["boxes"].new_tensor([sx, sy, sx, sy])
        det["boxes"][:, 0::2] = det["boxes"][:, 0::2].clamp(0, width)
        det["boxes"][:, 1::2] = det["boxes"][:, 1::2].clamp(0, height)
    return detections


class ClassifierSteps:
    """Image-classification training: cross-entropy with ``label_smoothing`` on images of ``image_size``."""

    image_size: int

    def check_resolution(self, images: torch.Tensor) -> None:
        size = self.image_size
        if images.shape[-2:] != (size, size):
            raise HarnessError(
                f"{self.hparams.model} expects {size}x{size} images but the data module gave "
                f"{tuple(images.shape[-2:])}; set the system's image_size or the data module's to match"
            )

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        images, labels = batch
        self.check_resolution(images)
        loss = F.cross_entropy(self(images), labels, label_smoothing=self.hparams.label_smoothing)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/lr", self.lr_schedulers().get_last_lr()[0])
        return loss
