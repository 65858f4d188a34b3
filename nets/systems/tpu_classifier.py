"""The ImageNet training loop of the TPU EfficientNet / MnasNet code (tensorflow/tpu, models/official/efficientnet,
``main.py`` and ``utils.py``), shared by the EfficientNet, MobileNetV3 and CondConv classifiers:

- TF-1 RMSProp (:class:`nets.optim.RMSpropTF`) with the learning rate given per ``lr_batch_size`` images and scaled
  linearly with the global batch;
- linear warm-up, then staircase exponential decay (:func:`nets.optim.warmup_staircase_decay`), set every step;
- L2 weight decay as the gradient term ``weight_decay * w`` on every parameter but batch-norm ones
  (:func:`nets.systems.steps.l2_param_groups`);
- an exponential moving average of the weights and BN statistics with TF's ``num_updates`` ramp
  (:func:`nets.optim.tf_ema_avg_fn`); validation runs on it and it replaces the weights after fit.

A system mixes :class:`TPUClassifierSteps` in ahead of the task's evaluation steps
(:class:`tasks.imagenet.steps.AccuracySteps`) and ``pl.LightningModule``, builds ``self.model`` and sets what
:class:`nets.systems.steps.ClassifierSteps` and ``AccuracySteps`` need; its hyper-parameters carry ``lr``,
``lr_batch_size``, ``rmsprop_decay``, ``momentum``, ``eps``, ``weight_decay``, ``warmup_epochs``,
``lr_decay_epochs``, ``lr_decay_factor`` and ``ema_decay`` (0: no averaging).
"""

from __future__ import annotations

import torch
from pytorch_lightning.callbacks import Callback, WeightAveraging

from nets.optim import RMSpropTF, tf_ema_avg_fn, warmup_staircase_decay
from nets.systems.steps import ClassifierSteps, global_batch, l2_param_groups


class TPUClassifierSteps(ClassifierSteps):
    """Classifier steps plus the TPU recipe's optimiser, schedule and weight averaging (see the module docstring)."""

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        steps_per_epoch, batch = global_batch(self.trainer)
        peak_lr = hp.lr * batch / hp.lr_batch_size
        optimizer = RMSpropTF(
            l2_param_groups(self.model, hp.weight_decay),
            lr=peak_lr,
            alpha=hp.rmsprop_decay,
            momentum=hp.momentum,
            eps=hp.eps,
        )

        def factor(step: int) -> float:
            return warmup_staircase_decay(
                step, steps_per_epoch, 1.0, hp.warmup_epochs, hp.lr_decay_epochs, hp.lr_decay_factor
            )

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def configure_callbacks(self) -> list[Callback]:
        """The EMA of weights and BN statistics; validation runs on it and it replaces the weights after fit."""
        if not self.hparams.ema_decay:
            return []
        return [WeightAveraging(avg_fn=tf_ema_avg_fn(self.hparams.ema_decay), use_buffers=True)]
