"""Lightning system for Selfie (arXiv 1906.02940): pre-training with the patch-selection loss, then fine-tuning
ResNet-50 on a few-label subset, in one ``Trainer.fit``; or the supervised baseline (no pre-training).

Epochs ``[0, pretrain_epochs)`` train the Selfie objective on every training image (labels unused; see
:class:`reproductions.selfie.data.SelfieDataModule`), the remaining epochs fine-tune on the labelled subset with
softmax cross-entropy. Each phase has its own peak learning rate with a linear warm-up and a cosine decay to 0 over
the phase, set per batch. SGD with Nesterov momentum 0.9 and weight decay on non-BatchNorm parameters.

The paper's optimisation details (optimizer, learning rates, epochs, augmentation of each phase) could not be
re-checked while writing this reproduction; every one is an argument, and the configs state what they use.
Batches are ``(float (N, 3, S, S), long (N,))``. Test metrics: ``top1``, ``top5``, ``error`` (percent).
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError
from nets.systems.steps import ClassifierSteps, l2_param_groups
from nets.weights import load_state
from reproductions.selfie.model import SelfieNet, build, selfie_loss
from reproductions.selfie.variants import NETWORKS
from tasks.imagenet.metric import accuracy_metrics
from tasks.imagenet.steps import AccuracySteps


def phase_lr(progress: float, peak: float, warmup: float) -> float:
    """Learning rate at ``progress`` in [0, 1] of a phase: linear warm-up over ``warmup``, then cosine to 0."""
    if progress < warmup:
        return peak * progress / warmup
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, (progress - warmup) / max(1e-8, 1 - warmup))))


class SelfieSystem(ClassifierSteps, AccuracySteps, pl.LightningModule):
    """``selfie-*``: Selfie pre-training then fine-tuning; ``supervised-*``: fine-tuning only (the baseline)."""

    def __init__(
        self,
        model: str = "selfie-resnet50",
        num_classes: int = 1000,
        image_size: int | None = None,
        pretrain_epochs: int = 0,
        lr_pretrain: float = 0.1,
        lr_finetune: float = 0.1,
        lr_batch_size: int = 256,
        warmup: float = 0.05,
        momentum: float = 0.9,
        weight_decay: float = 1e-4,
        label_smoothing: float = 0.0,
        checkpoint: str | None = None,
    ) -> None:
        """``warmup`` is the fraction of each phase spent warming up; lrs are per ``lr_batch_size`` images."""
        super().__init__()
        self.save_hyperparameters()
        if model not in NETWORKS:
            raise HarnessError(f"unknown Selfie model id {model!r}; known: {', '.join(NETWORKS)}")
        network = NETWORKS[model]
        if pretrain_epochs and not network.selfie:
            raise HarnessError(f"{model} is the supervised baseline: it has no pre-training (pretrain_epochs=0)")
        self.image_size = image_size or network.image_size
        self.model = build(model, num_classes)
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        self.val_metrics = accuracy_metrics(num_classes, prefix="val/")
        self.test_metrics = nn.ModuleList()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, S, S) -> (N, num_classes)

    def pretraining(self) -> bool:
        return self.current_epoch < self.hparams.pretrain_epochs

    def on_train_batch_start(self, batch: tuple, batch_idx: int) -> None:
        hp = self.hparams
        epochs = self.trainer.max_epochs or 1
        pre = self.pretraining()
        start, length = (0, hp.pretrain_epochs) if pre else (hp.pretrain_epochs, epochs - hp.pretrain_epochs)
        batches = max(1, self.trainer.num_training_batches)
        progress = (self.current_epoch - start + batch_idx / batches) / max(1, length)
        scale = batch[0].shape[0] * self.trainer.world_size * self.trainer.accumulate_grad_batches / hp.lr_batch_size
        peak = (hp.lr_pretrain if self.pretraining() else hp.lr_finetune) * scale
        for group in self.optimizers().param_groups:
            group["lr"] = phase_lr(progress, peak, hp.warmup)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        images, labels = batch
        self.check_resolution(images)
        if self.pretraining():
            if not isinstance(self.model, SelfieNet):
                raise HarnessError(f"{self.hparams.model} cannot pre-train")
            loss, accuracy = selfie_loss(self.model.pretrain_logits(images))
            self.log_dict({"pretrain/loss": loss, "pretrain/patch_accuracy": accuracy}, prog_bar=True)
            return loss
        loss = F.cross_entropy(self(images), labels, label_smoothing=self.hparams.label_smoothing)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        hp = self.hparams
        groups = l2_param_groups(self.model, hp.weight_decay)
        return torch.optim.SGD(groups, lr=hp.lr_pretrain, momentum=hp.momentum, nesterov=True)
