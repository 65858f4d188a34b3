"""Optimisation pieces of the TensorFlow-1 TPU training code that several papers' recipes name, in PyTorch.

- :class:`RMSpropTF`: ``tf.train.RMSPropOptimizer`` as the TPU EfficientNet / MnasNet code uses it (tensorflow/tpu,
  models/official/efficientnet ``utils.build_optimizer``): epsilon inside the square root, the mean-square
  accumulator starting at 1, the learning rate applied before the momentum buffer; torch's RMSprop differs in all
  three. Used by EfficientNet, MobileNetV3 and CondConv.
- :func:`warmup_staircase_decay`: that code's learning-rate schedule (linear warm-up, staircase exponential decay).
- :func:`tf_ema_avg_fn`: ``tf.train.ExponentialMovingAverage(decay, num_updates=global_step)`` as the ``avg_fn`` of
  Lightning's ``WeightAveraging`` / torch's ``AveragedModel``; ``ramp=False`` is the same class without
  ``num_updates`` (a constant decay, as google-research/uda's image code uses it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch


def warmup_staircase_decay(
    step: int,
    steps_per_epoch: float,
    peak_lr: float,
    warmup_epochs: float = 5.0,
    decay_epochs: float = 2.4,
    decay_factor: float = 0.97,
) -> float:
    """Linear warm-up from 0 over ``warmup_epochs``, then ``decay_factor`` every ``decay_epochs``, counted from step 0.

    The TPU EfficientNet / MnasNet code's ``utils.build_learning_rate('exponential')``:
    ``tf.train.exponential_decay(..., staircase=True)`` under a linear warm-up, so warm-up ends below the peak.
    """
    warmup_steps = int(warmup_epochs * steps_per_epoch)
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * decay_factor ** math.floor(step / (decay_epochs * steps_per_epoch))


def tf_ema_avg_fn(
    decay: float, ramp: bool = True
) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor | int], torch.Tensor]:
    """``AveragedModel`` update of ``tf.train.ExponentialMovingAverage(decay, num_updates=global_step)``: the decay
    is ``min(decay, (1 + n) / (10 + n))``; with ``ramp=False`` (no ``num_updates``) it is ``decay`` throughout."""

    def update(averaged: torch.Tensor, current: torch.Tensor, num_updates: torch.Tensor | int) -> torch.Tensor:
        if not averaged.is_floating_point():  # integer buffers (BN's num_batches_tracked) are copied
            return current
        d = min(decay, (1.0 + float(num_updates)) / (10.0 + float(num_updates))) if ramp else decay
        return averaged + (1.0 - d) * (current - averaged)

    return update


class RMSpropTF(torch.optim.Optimizer):
    """TF-1 ``RMSPropOptimizer``: ms <- a ms + (1-a) g^2; mom <- m mom + lr g / sqrt(ms + eps); w <- w - mom.

    ``ms`` starts at 1 (TF's ``ones_initializer``), ``mom`` at 0. ``weight_decay`` adds ``wd * w`` to the
    gradient first, i.e. the gradient of an L2 loss ``wd * ||w||^2 / 2``.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict],
        lr: float = 0.256,
        alpha: float = 0.9,
        momentum: float = 0.9,
        eps: float = 1e-3,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, momentum=momentum, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.add(p, alpha=group["weight_decay"]) if group["weight_decay"] else p.grad
                state = self.state[p]
                if not state:
                    state["ms"] = torch.ones_like(p)
                    state["mom"] = torch.zeros_like(p)
                ms, mom = state["ms"], state["mom"]
                ms.mul_(group["alpha"]).addcmul_(grad, grad, value=1.0 - group["alpha"])
                mom.mul_(group["momentum"]).addcdiv_(grad, ms.add(group["eps"]).sqrt_(), value=group["lr"])
                p.sub_(mom)
        return loss
