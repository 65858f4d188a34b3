"""The steps every image-classification system shares: label-smoothed cross-entropy training, top-1/top-5/error on
the validation loader and on each test loader (the metrics of :mod:`tasks.imagenet.metric`), and a check that
the data arrives at the resolution the model is built for.

A LightningModule mixes this in ahead of ``pl.LightningModule`` and sets ``self.image_size`` and
``self.val_metrics = accuracy_metrics(num_classes, prefix="val/")``; its hyper-parameters carry ``model``,
``num_classes`` and ``label_smoothing``. Batches are ``(float (N, 3, S, S) images, long (N,) labels)``.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError
from harness.evaluators import per_test_loader
from tasks.imagenet.metric import accuracy_metrics


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


class ClassifierSteps:
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

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        images, labels = batch
        self.check_resolution(images)
        self.val_metrics.update(self(images), labels)
        self.log_dict(self.val_metrics, prog_bar=True)

    def on_test_start(self) -> None:
        """One metric collection per test dataloader (harness.evaluators)."""
        self.test_metrics = per_test_loader(self, lambda _: accuracy_metrics(self.hparams.num_classes))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        images, labels = batch
        self.check_resolution(images)
        self.test_metrics[dataloader_idx].update(self(images), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)
