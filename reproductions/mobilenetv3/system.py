"""Lightning system for MobileNetV3 (arXiv 1905.02244v5) image classification with the paper's ImageNet recipe.

Section 6.1: synchronous training on a 4x4 TPU Pod with TensorFlow's RMSPropOptimizer, momentum 0.9, initial learning
rate 0.1 at batch 4096 (128 images per chip), "learning rate decay rate of 0.01 every 3 epochs", dropout 0.8, L2
weight decay 1e-5, Inception preprocessing, an exponential moving average of the weights with decay 0.9999, and
batch normalisation with average decay 0.99. How this reads in code:

- the decay "rate of 0.01 every 3 epochs" is a staircase factor 0.99 every 3 epochs (a factor of 0.01 would end
  training after 3 epochs); the paper gives no epoch count, no warm-up, no label smoothing and no RMSProp epsilon,
  and the authors' README says "TODO: Add V3 hyperparameters". Defaults here: no warm-up, no label smoothing, and
  the TF-1 RMSProp of the EfficientNet/MnasNet TPU code (decay 0.9, epsilon 1e-3 inside the square root, mean-square
  accumulator starting at 1), reused from :mod:`reproductions.efficientnet.system`;
- "dropout of 0.8" is TF's keep probability (slim ``training_scope(dropout_keep_prob=0.8)``): rate 0.2;
- the learning rate scales linearly with the global batch (0.1 x batch / 4096), as the efficientnet system does;
- L2 weight decay as the gradient term ``1e-5 * w`` on every parameter but batch-norm ones;
- the EMA covers weights and BN statistics with TF's ``num_updates`` ramp; evaluation uses it.

Batches are ``(images, labels)``: float ``(N, 3, H, W)`` images and long ``(N,)`` class indices.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, WeightAveraging
from torch import nn

from harness.errors import HarnessError
from reproductions.efficientnet.system import RMSpropTF, learning_rate, load_weights, tf_ema_avg_fn
from reproductions.mobilenetv3.model import BN_MOMENTUM, DROPOUT, VARIANTS, mobilenetv3
from tasks.imagenet.metric import accuracy_metrics
from tasks.imagenet.steps import ClassifierSteps, global_batch, l2_param_groups

MODEL_PREFIX = "mobilenetv3-"


def parse_variant(model: str) -> str:
    """``"mobilenetv3-small-0.75"`` -> ``"small-0.75"``; other ids (segmentation ones included) are an error."""
    variant = model.removeprefix(MODEL_PREFIX)
    if not model.startswith(MODEL_PREFIX) or variant not in VARIANTS:
        known = ", ".join(MODEL_PREFIX + v for v in VARIANTS)
        raise HarnessError(f"unknown MobileNetV3 classification model id {model!r}; known: {known}")
    return variant


def set_bn_momentum(module: nn.Module, momentum: float) -> None:
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = momentum


class MobileNetV3System(ClassifierSteps, pl.LightningModule):
    """MobileNetV3 classifiers trained and evaluated on ImageNet-format batches with the Section 6.1 recipe."""

    def __init__(
        self,
        model: str = "mobilenetv3-large-1.0",
        num_classes: int = 1000,
        image_size: int = 224,
        dropout: float = DROPOUT,
        bn_momentum: float = BN_MOMENTUM,
        lr: float = 0.1,
        lr_batch_size: int = 4096,
        rmsprop_decay: float = 0.9,
        momentum: float = 0.9,
        eps: float = 1e-3,
        weight_decay: float = 1e-5,
        warmup_epochs: float = 0.0,
        lr_decay_epochs: float = 3.0,
        lr_decay_factor: float = 0.99,
        label_smoothing: float = 0.0,
        ema_decay: float = 0.9999,
        checkpoint: str | None = None,
    ) -> None:
        """``lr`` is the rate at a global batch of ``lr_batch_size`` images; the run scales it linearly.

        ``image_size`` is the resolution the data must arrive at. ``bn_momentum`` is PyTorch's (0.01 = TF's 0.99).
        ``ema_decay=0`` trains without weight averaging. ``checkpoint`` loads weights for evaluation.
        """
        super().__init__()
        self.save_hyperparameters()
        self.model = self.build_model()
        set_bn_momentum(self.model, bn_momentum)
        if checkpoint is not None:
            load_weights(self.model, checkpoint)
        self.val_metrics = accuracy_metrics(num_classes, prefix="val/")
        self.image_size = image_size
        self.test_metrics = nn.ModuleList()  # one collection per test dataloader, made in on_test_start

    def build_model(self) -> nn.Module:
        hp = self.hparams
        return mobilenetv3(parse_variant(hp.model), hp.num_classes, dropout=hp.dropout)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, H, W) -> (N, num_classes) logits

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        steps_per_epoch, batch = global_batch(self.trainer)
        optimizer = RMSpropTF(
            l2_param_groups(self.model, hp.weight_decay),
            lr=hp.lr * batch / hp.lr_batch_size,
            alpha=hp.rmsprop_decay,
            momentum=hp.momentum,
            eps=hp.eps,
        )

        def factor(step: int) -> float:
            return learning_rate(step, steps_per_epoch, 1.0, hp.warmup_epochs, hp.lr_decay_epochs, hp.lr_decay_factor)

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def configure_callbacks(self) -> list[Callback]:
        """The EMA of weights and BN statistics; validation runs on it and it replaces the weights after fit."""
        if not self.hparams.ema_decay:
            return []
        return [WeightAveraging(avg_fn=tf_ema_avg_fn(self.hparams.ema_decay), use_buffers=True)]
