"""SQuAD exact match and F1 as a torchmetrics ``Metric``: accumulate per batch, compute once.

Same definitions as the official-format scorer (``tasks.squad.score``), whose per-question functions it calls:
answer normalisation, max over gold answers, and the version's own F1 and no-answer rules. Percentages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from tasks.squad.score import question_scores_v1, question_scores_v2

_QUESTION_SCORES = {"1.1": question_scores_v1, "2.0": question_scores_v2}


class SquadMetric(Metric):
    """``exact_match`` and ``f1`` over all questions seen, as percentages.

    ``update(preds, target)``: ``preds`` the predicted answer strings of a batch; ``target`` for each question its
    gold answer strings as in the dev file (v2.0: an empty list for an unanswerable question, and ``""`` as the
    prediction for "no answer"). v1.1 needs at least one gold answer per question.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, version: str = "1.1", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        version = version.removeprefix("v")
        if version not in _QUESTION_SCORES:
            raise ValueError(f"SQuAD version must be '1.1' or '2.0', not {version!r}")
        self.version = version
        self.add_state("exact_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("f1_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Sequence[str], target: Sequence[Sequence[str]]) -> None:
        if len(preds) != len(target):
            raise ValueError(f"{len(preds)} predictions for {len(target)} questions")
        question_scores = _QUESTION_SCORES[self.version]
        exact = f1 = 0.0
        for prediction, golds in zip(preds, target, strict=True):
            q_exact, q_f1 = question_scores(prediction, golds)
            exact += q_exact
            f1 += q_f1
        self.exact_sum += exact
        self.f1_sum += f1
        self.total += len(preds)

    def compute(self) -> dict[str, Tensor]:
        return {"exact_match": 100.0 * self.exact_sum / self.total, "f1": 100.0 * self.f1_sum / self.total}
