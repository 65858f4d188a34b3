"""Lightning system for the CondConv models (arXiv 1904.04971v4) on ImageNet.

The EfficientNet-CondConv models were trained by the authors with the EfficientNet TPU code (tensorflow/tpu,
models/official/efficientnet: ``main.py --model_name=efficientnet-condconv-b0-8e``), so the defaults here are that
code's recipe, as the EfficientNet reproduction documents it: RMSProp (decay 0.9, momentum 0.9, epsilon
1e-3), lr 0.256 at batch 4096 with 5 warm-up epochs then x0.97 every 2.4 epochs, L2 1e-5 on non-BN parameters, label
smoothing 0.1, EMA 0.9999, BN momentum 0.99; classifier dropout from the model row (0.25 for EfficientNet-CondConv).
The loop itself (steps, metrics, optimizer, EMA) is :class:`nets.systems.tpu_classifier.TPUClassifierSteps`, the one
EfficientNet's and MobileNetV3's classifiers use; only the model and these defaults differ.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import nn

from harness.registry import model_variant
from nets.layers import set_bn
from nets.systems.tpu_classifier import TPUClassifierSteps, TPURecipe
from nets.weights import load_state
from reproductions.condconv.model import build
from reproductions.condconv.variants import ALL_VARIANTS
from tasks.imagenet.metric import accuracy_metrics
from tasks.imagenet.steps import AccuracySteps


def check_model(model: str) -> str:
    return model_variant(model, ALL_VARIANTS, "CondConv")


class CondConvSystem(TPUClassifierSteps, AccuracySteps, pl.LightningModule):
    """CondConv / baseline classifiers with the EfficientNet TPU recipe (see the module docstring)."""

    RECIPE = TPURecipe()  # EfficientNet's

    def __init__(
        self,
        model: str = "efficientnet-condconv-b0-8e",
        num_classes: int = 1000,
        image_size: int = 224,
        dropout: float | None = None,
        bn_momentum: float = 0.01,
        checkpoint: str | None = None,
        **recipe: Any,
    ) -> None:
        """``dropout=None`` takes the model row's classifier dropout; ``bn_momentum`` is PyTorch's (0.01 = TF's
        0.99); ``checkpoint`` loads weights for evaluation; ``recipe``: fields of
        :class:`nets.systems.tpu_classifier.TPURecipe` (``lr``, ``lr_batch_size``, ..., ``ema_decay``) in place of
        EfficientNet's (:attr:`RECIPE`)."""
        super().__init__()
        self.save_hyperparameters()
        self.init_recipe(recipe)
        self.model = build(check_model(model), num_classes, dropout)
        set_bn(self.model, bn_momentum)
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        self.val_metrics = accuracy_metrics(num_classes, prefix="val/")
        self.image_size = image_size
        self.test_metrics = nn.ModuleList()  # one collection per test dataloader, made in on_test_start

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, H, W) -> (N, num_classes) logits
