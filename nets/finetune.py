"""Fine-tuning schedules of ULMFiT (Howard & Ruder, "Universal Language Model Fine-tuning for Text Classification",
ACL 2018, arXiv 1801.06146v5, Section 3), usable by any paper that fine-tunes a layered network:

- **Discriminative fine-tuning** (Section 3.2): the parameters are split into layer groups ``θ^1 .. θ^L`` (bottom to
  top), each with its own learning rate; the paper chooses ``η^L`` and sets ``η^{l-1} = η^l / 2.6``
  (:func:`discriminative_lrs`).
- **Slanted triangular learning rates** (STLR, Section 3.2, Equation 3): over ``T`` iterations the rate rises
  linearly for the first ``cut = ⌊T · cut_frac⌋`` of them and then decays linearly;
  ``p = t / cut`` while ``t < cut``, else ``p = 1 - (t - cut) / (cut · (1 / cut_frac - 1))``;
  ``η_t = η_max · (1 + p · (ratio - 1)) / ratio``. So the rate starts at ``η_max / ratio``, peaks at ``η_max`` and
  ends at ``η_max / ratio``. The paper uses ``cut_frac = 0.1``, ``ratio = 32``, ``η_max = 0.01``
  (:func:`slanted_triangular`).
- **Gradual unfreezing** (Section 3.3): "We first unfreeze the last layer and fine-tune all unfrozen layers for one
  epoch. We then unfreeze the next lower frozen layer and repeat, until we fine-tune all layers until convergence
  at the last iteration." (:func:`trainable_groups`, :func:`unfreezing_stages`); 'chain-thaw', the method Table 7
  compares it with (:func:`chain_thaw`).

Plain functions over group counts, epochs and steps: a training loop applies them to its optimizer's groups.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn

DISCRIMINATIVE_FACTOR = 2.6  # η^{l-1} = η^l / 2.6


def discriminative_lrs(groups: int, top_lr: float, factor: float = DISCRIMINATIVE_FACTOR) -> list[float]:
    """Learning rates of ``groups`` layer groups, bottom first: the top group gets ``top_lr``, each lower one
    ``1 / factor`` of the one above it (``factor = 1``: one rate for all)."""
    if groups < 1 or factor <= 0:
        raise ValueError(f"need at least one group and a positive factor; got {groups} groups, factor {factor}")
    return [top_lr / factor ** (groups - 1 - index) for index in range(groups)]


def slanted_triangular(step: int, total: int, cut_frac: float = 0.1, ratio: float = 32.0) -> float:
    """``η_t / η_max`` at iteration ``step`` (0-based) of ``total`` (Equation 3; see the module docstring)."""
    if total < 1 or not 0 < cut_frac < 1 or ratio < 1:
        raise ValueError(f"STLR needs total >= 1, 0 < cut_frac < 1, ratio >= 1; got {total}, {cut_frac}, {ratio}")
    cut = max(1, math.floor(total * cut_frac))
    t = min(max(step, 0), total)
    if t < cut:
        p = t / cut
    else:
        p = max(0.0, 1 - (t - cut) / (cut * (1 / cut_frac - 1)))
    return (1 + p * (ratio - 1)) / ratio


def cosine_annealing(step: int, total: int) -> float:
    """``η_t / η_max`` of aggressive cosine annealing (Loshchilov & Hutter, one cycle, no restart): Table 7's 'Cos'."""
    if total < 1:
        raise ValueError(f"cosine annealing needs total >= 1; got {total}")
    return 0.5 * (1 + math.cos(math.pi * min(max(step, 0), total) / total))


def trainable_groups(epoch: int, groups: int) -> int:
    """How many top layer groups train in ``epoch`` (0-based) under gradual unfreezing: one more each epoch."""
    return min(groups, epoch + 1)


def unfreezing_stages(epochs: int, groups: int) -> list[tuple[int, int]]:
    """``(first epoch, epochs)`` of each stage under gradual unfreezing: one epoch per newly unfrozen group, then
    every group for the remaining epochs (the last stage)."""
    if epochs < 1 or groups < 1:
        raise ValueError(f"need at least one epoch and one group; got {epochs} epochs, {groups} groups")
    stages = [(epoch, 1) for epoch in range(min(groups - 1, epochs - 1))]
    start = len(stages)
    return [*stages, (start, epochs - start)]


def chain_thaw(epoch: int, groups: int) -> list[bool]:
    """Which layer groups train in ``epoch`` under 'chain-thaw' (Felbo et al. 2017, Table 7's comparison): the new top
    layer first, then each layer alone from the bottom up, then all of them."""
    if epoch == 0:
        return [index == groups - 1 for index in range(groups)]
    if epoch < groups:
        return [index == epoch - 1 for index in range(groups)]
    return [True] * groups


def set_trainable(groups: Sequence[Sequence[nn.Module]], trainable: int | Sequence[bool]) -> None:
    """Freeze every layer group but the top ``trainable`` ones, or those whose flag is true (``requires_grad``; frozen
    weights get no gradient, so an optimizer skips them)."""
    if isinstance(trainable, int):
        trainable = [index >= len(groups) - trainable for index in range(len(groups))]
    for modules, train in zip(groups, trainable, strict=True):
        for module in modules:
            for parameter in module.parameters():
                parameter.requires_grad_(train)
