"""Lightning system for the ResNets and AA-ResNets of arXiv 1904.09925 on ImageNet-format batches.

The paper trains its ImageNet ResNets with "the standard ResNet setup"; the recipe here is the one of the
authors' TPU ResNet code (tensorflow/tpu models/official/resnet, ``resnet_main.py`` and ``configs/resnet_config.py``),
which that setup refers to:

- SGD with momentum 0.9; learning rate 0.1 per 256 images, scaled linearly with the global batch;
- 5 epochs of linear warm-up from 0, then x0.1 at 30/90, 60/90 and 80/90 of the run (``get_lr_schedule``, which
  scales the 90-epoch milestones to the run's length);
- L2 weight decay 1e-4 on every trainable variable except batch-norm ones (added to the gradient, as
  ``weight_decay * sum(||w||^2 / 2)`` in the loss does);
- softmax cross-entropy, label smoothing as configured (official default 0.0);
- batch-norm momentum 0.9 (TF decay; PyTorch ``momentum=0.1``), the PyTorch default.

The paper's own epoch count, batch size and label smoothing for the AA-ResNets were not re-checked while writing
this reproduction; the full config states what it uses. Batches are ``(float (N, 3, H, W), long (N,))``.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import nn

from harness.errors import HarnessError
from nets.specs import RESNETS
from nets.systems.steps import ClassifierSteps, global_batch, l2_param_groups
from nets.weights import load_state
from reproductions.attention_augmented.model import build, build_budget
from reproductions.attention_augmented.variants import AUGMENTATION, BUDGET
from tasks.imagenet.metric import accuracy_metrics
from tasks.imagenet.steps import AccuracySteps

WARMUP_FRACTION = 5 / 90
DECAY_POINTS = (30 / 90, 60 / 90, 80 / 90)


def parse_model(model: str) -> tuple[int, bool]:
    """``"aa-resnet50"`` -> ``(50, True)``, ``"resnet34"`` -> ``(34, False)``; other ids are an error."""
    augmented = model.startswith("aa-")
    name = model.removeprefix("aa-")
    depth = name.removeprefix("resnet")
    known = [f"resnet{d}" for d in RESNETS] + [f"aa-resnet{d}" for d in AUGMENTATION]
    if not name.startswith("resnet") or not depth.isdigit() or model not in known:
        raise HarnessError(f"unknown attention-augmented model id {model!r}; known: {', '.join(known)}")
    return int(depth), augmented


def build_classifier(model: str, num_classes: int) -> nn.Module:
    """The network of a classifier id: an ImageNet (AA-)ResNet, or one of the budget tier's small ResNets."""
    if model in BUDGET:
        return build_budget(model, num_classes)
    depth, augmented = parse_model(model)
    return build(depth, augmented, num_classes)


def step_schedule(step: int, total_steps: int, steps_per_epoch: float, warmup_epochs: float = 5.0) -> float:
    """Learning-rate multiplier: linear warm-up, then x0.1 at 1/3, 2/3 and 8/9 of the run (official schedule)."""
    warmup = warmup_epochs * steps_per_epoch
    if step < warmup:
        return step / warmup
    return 0.1 ** sum(step >= point * total_steps for point in DECAY_POINTS)


class AttentionAugmentedSystem(ClassifierSteps, AccuracySteps, pl.LightningModule):
    """ResNet-34/50/101/152 and AA-ResNet-34/50/101/152 classifiers (and the budget tier's small pair) with the
    official TPU ResNet recipe."""

    def __init__(
        self,
        model: str = "aa-resnet50",
        num_classes: int = 1000,
        image_size: int = 224,
        lr: float = 0.1,
        lr_batch_size: int = 256,
        momentum: float = 0.9,
        weight_decay: float = 1e-4,
        warmup_epochs: float = 5.0,
        label_smoothing: float = 0.0,
        checkpoint: str | None = None,
        channels_last: bool = False,
    ) -> None:
        """``lr`` is the peak rate at a global batch of ``lr_batch_size``; ``image_size`` the expected input;
        ``channels_last`` keeps the weights and activations in NHWC memory order (the same computation, faster on
        CPU for the budget pair, equal to float round-off; see tests)."""
        super().__init__()
        self.save_hyperparameters()
        self.model = build_classifier(model, num_classes)
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        if channels_last:
            self.model.to(memory_format=torch.channels_last)
        self.val_metrics = accuracy_metrics(num_classes, prefix="val/")
        self.image_size = image_size
        self.test_metrics = nn.ModuleList()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.hparams.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        return self.model(images)  # (N, 3, H, W) -> (N, num_classes)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        steps_per_epoch, batch = global_batch(self.trainer)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        optimizer = torch.optim.SGD(
            l2_param_groups(self.model, hp.weight_decay), lr=hp.lr * batch / hp.lr_batch_size, momentum=hp.momentum
        )

        def factor(step: int) -> float:
            return step_schedule(step, total, steps_per_epoch, hp.warmup_epochs)

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
