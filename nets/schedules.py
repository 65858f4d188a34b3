"""Learning-rate multipliers with a linear warm-up, as ``torch.optim.lr_scheduler.LambdaLR`` takes them (step ->
factor).

Written from the definitions of OpenAI's released GPT code (openai/finetune-transformer-lm, ``opt.py``), where
``x = step / total`` is the fraction of training done and ``w`` the warm-up fraction:

- ``warmup_linear``: ``(x / w if x <= w else 1) * (1 - x)``: GPT's fine-tuning ("a linear learning rate decay
  schedule with warmup over 0.2% of training");
- ``warmup_cosine``: ``x / w if x <= w else 0.5 * (1 + cos(pi * x))``: GPT's pre-training ("increased linearly from
  zero over the first 2000 updates and annealed to 0 using a cosine schedule"). As released, the cosine runs over
  the whole of training (``cos(pi * x)``), not over the steps after the warm-up.

Step 0 has factor 0, as the released optimiser's first update reads the schedule at ``t = 0``.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def _fraction(step: int, total: int) -> float:
    if total < 1:
        raise ValueError(f"total steps must be at least 1; got {total}")
    return min(step / total, 1.0)


def warmup_linear(total: int, warmup: float) -> Callable[[int], float]:
    """Linear warm-up over the fraction ``warmup`` of ``total`` steps, then linear decay to 0 at ``total``."""

    def factor(step: int) -> float:
        x = _fraction(step, total)
        return (x / warmup if warmup > 0 and x <= warmup else 1.0) * (1.0 - x)

    return factor


def warmup_cosine(total: int, warmup: float) -> Callable[[int], float]:
    """Linear warm-up over the fraction ``warmup`` of ``total`` steps, then ``0.5 (1 + cos(pi x))``."""

    def factor(step: int) -> float:
        x = _fraction(step, total)
        return x / warmup if warmup > 0 and x <= warmup else 0.5 * (1.0 + math.cos(math.pi * x))

    return factor
