"""Lightning system for EfficientNet (arXiv 1905.11946v5) with the paper's ImageNet training recipe.

Section 5.2 of the paper: RMSProp with decay 0.9 and momentum 0.9, batch-norm momentum 0.99, weight decay 1e-5,
initial learning rate 0.256 decayed by 0.97 every 2.4 epochs, swish, AutoAugment (a data-side option), stochastic
depth with survival probability 0.8, dropout 0.2 (B0) .. 0.5 (B7). Details the paper leaves out are taken from the
authors' released code (tensorflow/tpu, models/official/efficientnet, ``main.py`` and ``utils.py``):

- learning rate 0.016 per 256 images, scaled linearly with the global batch (0.256 at 4096); 5 epochs of linear
  warm-up from 0 (``lr_warmup_epochs=5``), then the staircase 0.97 decay counted from step 0
  (``tf.train.exponential_decay(..., staircase=True)``), so warm-up ends at 0.97**2 of the peak;
- ``tf.train.RMSPropOptimizer(lr, decay=0.9, momentum=0.9, epsilon=1e-3)``: epsilon sits inside the square root,
  the mean-square accumulator starts at 1 and the learning rate multiplies the gradient before the momentum
  buffer; torch's RMSprop differs in all three, so :class:`nets.optim.RMSpropTF` implements the TF update;
- weight decay as an L2 term ``1e-5 * sum(||w||^2 / 2)`` added to the loss for every trainable variable except
  batch-norm ones (conv kernels, SE and classifier biases included); its gradient ``1e-5 * w`` is added to the
  gradient before RMSProp, exactly what the optimizer's ``weight_decay`` on the non-BN parameter group does;
- softmax cross-entropy with label smoothing 0.1 (``--label_smoothing`` default 0.1);
- an exponential moving average of the weights and of the BN statistics, decay 0.9999 with TF's
  ``num_updates`` ramp ``min(decay, (1 + t) / (10 + t))``; evaluation uses the averaged weights.

Fine-tuning (Table 5, Section 5.3): ``init_checkpoint`` starts from ImageNet-trained weights with a new, randomly
initialised classifier for the target dataset's classes, as GPipe (Huang et al., arXiv 1811.06965, Section 4) whose
settings the paper borrows describes; see :func:`load_pretrained` and the ``configs/full-<dataset>.yaml`` files.

The optimiser, schedule and moving average are :class:`nets.systems.tpu_classifier.TPUClassifierSteps`, the loop
MobileNetV3 and CondConv share. Batches are ``(images, labels)``: float ``(N, 3, H, W)`` images and long ``(N,)`` class
indices.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from torch import nn

from harness.errors import HarnessError
from harness.registry import model_variant
from nets.systems.tpu_classifier import TPUClassifierSteps, TPURecipe
from nets.weights import load_state, read_state
from reproductions.efficientnet.model import BN_MOMENTUM, SURVIVAL_PROB, VARIANTS, efficientnet
from tasks.imagenet.metric import accuracy_metrics
from tasks.imagenet.steps import AccuracySteps

MODEL_PREFIX = "efficientnet-"


def parse_variant(model: str) -> str:
    """``"efficientnet-b3"`` -> ``"b3"``; anything else is an error naming the known ids."""
    return model_variant(model, VARIANTS, "EfficientNet", MODEL_PREFIX)


CLASSIFIER_KEYS = ("classifier.weight", "classifier.bias")  # the final fully connected layer of model.py


def load_pretrained(model: nn.Module, path: str | Path) -> None:
    """Initialise ``model`` for fine-tuning from weights trained on another dataset (ImageNet).

    Every tensor is loaded except the classifier's (``CLASSIFIER_KEYS``), which keeps its fresh initialisation
    whatever its size: GPipe "changed the number of output units in the last softmax classification layer to the
    number of classes in the target dataset and initialized the new softmax layer randomly". Any other missing,
    unexpected or differently shaped tensor is an error naming the file and the keys (e.g. B0 weights for B7).
    """
    if not Path(path).is_file():
        raise HarnessError(
            f"{path}: init_checkpoint not found; it must hold ImageNet-trained weights of this EfficientNet variant "
            "(a .safetensors file, a state dict or a Lightning checkpoint of EfficientNetSystem)"
        )
    state = {key: value for key, value in read_state(path).items() if key not in CLASSIFIER_KEYS}
    expected = {key for key in model.state_dict() if key not in CLASSIFIER_KEYS}
    missing = [key for key in model.state_dict() if key in expected and key not in state]
    unexpected = [key for key in state if key not in expected]
    if missing or unexpected:
        raise HarnessError(
            f"{path}: pretrained weights do not fit the model outside its classifier: "
            f"missing {missing[:5]}{' ...' if len(missing) > 5 else ''}, "
            f"unexpected {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}"
        )
    try:
        model.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # shape mismatches outside the classifier
        raise HarnessError(f"{path}: pretrained weights do not fit the model outside its classifier: {exc}") from exc


class EfficientNetSystem(TPUClassifierSteps, AccuracySteps, pl.LightningModule):
    """EfficientNet-B0..B7 trained and evaluated on ImageNet-format batches with the official recipe."""

    RECIPE = TPURecipe()  # the TPU code's defaults: RMSProp 0.256 per 4096 images, 5 warm-up epochs, x0.97 per 2.4

    def __init__(
        self,
        model: str = "efficientnet-b0",
        num_classes: int = 1000,
        image_size: int | None = None,
        dropout: float | None = None,
        survival_prob: float = SURVIVAL_PROB,
        bn_momentum: float = BN_MOMENTUM,
        checkpoint: str | None = None,
        init_checkpoint: str | None = None,
        **recipe: Any,
    ) -> None:
        """``recipe``: fields of :class:`nets.systems.tpu_classifier.TPURecipe` (``lr``, ``lr_batch_size``, ...,
        ``ema_decay``) in place of the official recipe's (:attr:`RECIPE`, the TPU code's defaults).

        ``image_size`` is the resolution the data must arrive at (the variant's own by default; smaller for the
        smoke tier). ``bn_momentum`` is PyTorch's (0.01 = TF's 0.99). ``checkpoint`` loads all weights for
        evaluation (:func:`nets.weights.load_state`); ``init_checkpoint`` loads ImageNet-trained weights to fine-tune
        from, all but the classifier (see :func:`load_pretrained`).
        """
        super().__init__()
        self.save_hyperparameters()
        self.init_recipe(recipe)
        if checkpoint is not None and init_checkpoint is not None:
            raise HarnessError(
                "EfficientNetSystem: give checkpoint (weights to evaluate) or init_checkpoint (weights to fine-tune "
                f"from), not both; got {checkpoint!r} and {init_checkpoint!r}"
            )
        self.variant = parse_variant(model)
        self.image_size = image_size or VARIANTS[self.variant].resolution
        self.model = efficientnet(
            self.variant, num_classes, dropout=dropout, survival_prob=survival_prob, bn_momentum=bn_momentum
        )
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        if init_checkpoint is not None:
            load_pretrained(self.model, init_checkpoint)
        self.val_metrics = accuracy_metrics(num_classes, prefix="val/")
        self.test_metrics = nn.ModuleList()  # one collection per test dataloader, made in on_test_start

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, H, W) -> (N, num_classes) logits
