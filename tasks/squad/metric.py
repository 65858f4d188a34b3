"""SQuAD exact match and F1 as a torchmetrics ``Metric``: accumulate per batch, compute once.

Same definitions as the official-format scorer (``tasks.squad.score``), whose per-question functions it calls:
answer normalisation, max over gold answers, and the version's own F1 and no-answer rules. Percentages.

It also keeps every predicted answer (with its question id when ``update`` is given ``ids``, and the no-answer
probability when given ``na_probs``), so :meth:`SquadMetric.write_predictions` writes the official prediction JSON
(and, for v2.0, the no-answer probabilities file) the scorer reads (``harness.predictions``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from harness.errors import HarnessError
from harness.predictions import KeptLists, Scoring, check_count
from tasks.squad.score import question_scores_v1, question_scores_v2

_QUESTION_SCORES = {"1.1": question_scores_v1, "2.0": question_scores_v2}


class SquadMetric(KeptLists, Metric):
    """``exact_match`` and ``f1`` over all questions seen, as percentages.

    ``update(preds, target)``: ``preds`` the predicted answer strings of a batch; ``target`` for each question its
    gold answer strings as in the dev file (v2.0: an empty list for an unanswerable question, and ``""`` as the
    prediction for "no answer"). v1.1 needs at least one gold answer per question.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    kept_lists = ("answers", "qids", "na_probs")

    def __init__(self, version: str = "1.1", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        version = version.removeprefix("v")
        if version not in _QUESTION_SCORES:
            raise ValueError(f"SQuAD version must be '1.1' or '2.0', not {version!r}")
        self.version = version
        self.add_state("exact_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("f1_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        # not states: strings do not sync across devices (predictions are written by single-device runs)
        self.answers: list[str] = []
        self.qids: list[str] = []
        self.na_probs: list[float] = []

    def update(
        self,
        preds: Sequence[str],
        target: Sequence[Sequence[str]],
        ids: Sequence[str] | None = None,
        na_probs: Sequence[float] | None = None,
    ) -> None:
        """``ids``: the questions' ids (else the data module's order is assumed); ``na_probs``: each question's
        probability of having no answer (v2.0's optional ``--na-probs`` file). Neither changes the scores."""
        if len(preds) != len(target):
            raise ValueError(f"{len(preds)} predictions for {len(target)} questions")
        self.answers.extend(preds)
        self.qids.extend(ids or [])
        self.na_probs.extend(float(p) for p in na_probs or [])
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

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/predictions.json`` (``{question id: answer}``) and, when every update gave ``na_probs``,
        ``folder/na_probs.json``; ids from ``update`` when it was given them, else ``scoring.ids`` in order."""
        check_count(len(self.answers), scoring, "answers")
        ids = self.qids if self.qids else list(scoring.ids)
        if len(ids) < len(self.answers):
            raise HarnessError(f"SquadMetric: {len(self.answers)} answers but {len(ids)} question ids were given")
        files = {"predictions": Path(folder) / "predictions.json"}
        files["predictions"].write_text(json.dumps(dict(zip(ids, self.answers, strict=False))), encoding="utf-8")
        if self.na_probs and len(self.na_probs) == len(self.answers):
            files["na_probs"] = Path(folder) / "na_probs.json"
            files["na_probs"].write_text(json.dumps(dict(zip(ids, self.na_probs, strict=False))), encoding="utf-8")
        return files
