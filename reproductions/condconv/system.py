"""Lightning system for the CondConv models (arXiv 1904.04971v4) on ImageNet.

The EfficientNet-CondConv models were trained by the authors with the EfficientNet TPU code (tensorflow/tpu,
models/official/efficientnet: ``main.py --model_name=efficientnet-condconv-b0-8e``), so the defaults here are that
code's recipe, as :mod:`reproductions.efficientnet.system` documents it: RMSProp (decay 0.9, momentum 0.9, epsilon
1e-3), lr 0.256 at batch 4096 with 5 warm-up epochs then x0.97 every 2.4 epochs, L2 1e-5 on non-BN parameters, label
smoothing 0.1, EMA 0.9999, BN momentum 0.99; classifier dropout from the model row (0.25 for EfficientNet-CondConv).
The loop itself (steps, metrics, optimizer, EMA) is :class:`~reproductions.mobilenetv3.system.MobileNetV3System`'s;
only the model and these defaults differ.
"""

from __future__ import annotations

from torch import nn

from harness.registry import model_variant
from reproductions.condconv.model import build
from reproductions.condconv.variants import ALL_VARIANTS
from reproductions.mobilenetv3.system import MobileNetV3System


def check_model(model: str) -> str:
    return model_variant(model, ALL_VARIANTS, "CondConv")


class CondConvSystem(MobileNetV3System):
    """CondConv / baseline classifiers with the EfficientNet TPU recipe (see the module docstring)."""

    def __init__(
        self,
        model: str = "efficientnet-condconv-b0-8e",
        num_classes: int = 1000,
        image_size: int = 224,
        dropout: float | None = None,
        bn_momentum: float = 0.01,
        lr: float = 0.256,
        lr_batch_size: int = 4096,
        rmsprop_decay: float = 0.9,
        momentum: float = 0.9,
        eps: float = 1e-3,
        weight_decay: float = 1e-5,
        warmup_epochs: float = 5.0,
        lr_decay_epochs: float = 2.4,
        lr_decay_factor: float = 0.97,
        label_smoothing: float = 0.1,
        ema_decay: float = 0.9999,
        checkpoint: str | None = None,
    ) -> None:
        """``dropout=None`` takes the model row's classifier dropout; the other arguments are MobileNetV3System's."""
        super().__init__(
            model, num_classes, image_size, dropout, bn_momentum, lr, lr_batch_size, rmsprop_decay, momentum, eps,
            weight_decay, warmup_epochs, lr_decay_epochs, lr_decay_factor, label_smoothing, ema_decay, checkpoint,
        )  # fmt: skip

    def build_model(self) -> nn.Module:
        hp = self.hparams
        return build(check_model(hp.model), hp.num_classes, hp.dropout)
