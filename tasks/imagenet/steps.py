"""The evaluation steps every image-classification system shares: top-1/top-5/error (the metrics of
:mod:`tasks.imagenet.metric`) on the validation loader and on each test loader. Training is the system's
(e.g. :class:`nets.systems.steps.ClassifierSteps`).

A LightningModule mixes :class:`AccuracySteps` in after its training steps and ahead of ``pl.LightningModule`` and
sets ``self.val_metrics = accuracy_metrics(num_classes, prefix="val/")``; its hyper-parameters carry
``num_classes``. Batches are ``(float (N, 3, S, S) images, long (N,) labels)``; each passes the system's
``check_resolution`` (none here) before it is scored.
"""

from __future__ import annotations

import torch

from harness.evaluators import per_test_loader
from tasks.imagenet.metric import accuracy_metrics


class AccuracySteps:
    def check_resolution(self, images: torch.Tensor) -> None:
        """The system's check that ``images`` are the size its model is built for (none by default)."""

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
