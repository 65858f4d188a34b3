"""The ImageNet training loop of the TPU EfficientNet / MnasNet code (tensorflow/tpu, models/official/efficientnet,
``main.py`` and ``utils.py``), shared by the EfficientNet, MobileNetV3 and CondConv classifiers:

- TF-1 RMSProp (:class:`nets.optim.RMSpropTF`) with the learning rate given per ``lr_batch_size`` images and scaled
  linearly with the global batch;
- linear warm-up, then staircase exponential decay (:func:`nets.optim.warmup_staircase_decay`), set every step;
- L2 weight decay as the gradient term ``weight_decay * w`` on every parameter but batch-norm ones
  (:func:`nets.systems.steps.l2_param_groups`);
- an exponential moving average of the weights and BN statistics with TF's ``num_updates`` ramp
  (:func:`nets.optim.tf_ema_avg_fn`); validation runs on it and it replaces the weights after fit.

The recipe's eleven hyper-parameters are one :class:`TPURecipe`. A system mixes :class:`TPUClassifierSteps` in ahead
of the task's evaluation steps (:class:`tasks.imagenet.steps.AccuracySteps`) and ``pl.LightningModule``, states its
paper's recipe as the class attribute ``RECIPE``, takes the recipe's arguments as ``**recipe`` (the configs give
them flat, beside the model's: ``lr: 0.016``) and calls :meth:`TPUClassifierSteps.init_recipe` after
``save_hyperparameters()``; it builds ``self.model`` and sets what :class:`nets.systems.steps.ClassifierSteps` and
``AccuracySteps`` need.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar

import torch
from pytorch_lightning.callbacks import Callback, WeightAveraging

from harness.errors import HarnessError
from nets.optim import RMSpropTF, tf_ema_avg_fn, warmup_staircase_decay
from nets.systems.steps import ClassifierSteps, global_batch, l2_param_groups


@dataclass(frozen=True)
class TPURecipe:
    """The TPU code's ImageNet training hyper-parameters (``main.py``'s flags), EfficientNet's values by default."""

    lr: float = 0.256  # the peak rate at a global batch of lr_batch_size images; the run scales it linearly
    lr_batch_size: int = 4096
    rmsprop_decay: float = 0.9
    momentum: float = 0.9
    eps: float = 1e-3
    weight_decay: float = 1e-5  # L2 on every parameter but batch-norm ones
    warmup_epochs: float = 5.0
    lr_decay_epochs: float = 2.4
    lr_decay_factor: float = 0.97
    label_smoothing: float = 0.1
    ema_decay: float = 0.9999  # 0: trains without weight averaging

    def given(self, values: dict[str, Any], owner: str) -> TPURecipe:
        """This recipe with ``values`` (a config's, by field name) in place of its own; an unknown name is an error
        naming ``owner`` (the system) and the recipe's fields."""
        names = [field.name for field in fields(self)]
        for key in values:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; the recipe's are: {', '.join(names)}"
                raise HarnessError(f"{owner} takes no argument {key!r}{hint}")
        return replace(self, **values)


class TPUClassifierSteps(ClassifierSteps):
    """Classifier steps plus the TPU recipe's optimiser, schedule and weight averaging (see the module docstring)."""

    RECIPE: ClassVar[TPURecipe] = TPURecipe()
    recipe: TPURecipe

    def init_recipe(self, values: dict[str, Any]) -> None:
        """The run's recipe: the class's ``RECIPE`` with the config's ``values``; the hyper-parameters then carry all
        of it (``label_smoothing`` for the training step, the whole recipe in checkpoints), not only what was given."""
        self.recipe = self.RECIPE.given(values, type(self).__name__)
        self.hparams.update(asdict(self.recipe))

    def configure_optimizers(self) -> dict:
        recipe = self.recipe
        steps_per_epoch, batch = global_batch(self.trainer)
        peak_lr = recipe.lr * batch / recipe.lr_batch_size
        optimizer = RMSpropTF(
            l2_param_groups(self.model, recipe.weight_decay),
            lr=peak_lr,
            alpha=recipe.rmsprop_decay,
            momentum=recipe.momentum,
            eps=recipe.eps,
        )

        def factor(step: int) -> float:
            return warmup_staircase_decay(
                step, steps_per_epoch, 1.0, recipe.warmup_epochs, recipe.lr_decay_epochs, recipe.lr_decay_factor
            )

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def configure_callbacks(self) -> list[Callback]:
        """The EMA of weights and BN statistics; validation runs on it and it replaces the weights after fit."""
        if not self.recipe.ema_decay:
            return []
        return [WeightAveraging(avg_fn=tf_ema_avg_fn(self.recipe.ema_decay), use_buffers=True)]
