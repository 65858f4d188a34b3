"""conlleval's span precision, recall and F1 as a torchmetrics ``Metric``: accumulate per batch, compute once.

Each sentence is counted as conlleval counts it between two blank lines (:func:`tasks.conll2003.score.sentence_counts`),
so the sums are the file's: the values equal ``harness score``'s on the file :meth:`ConllNerMetric.write_predictions`
writes. Token accuracy is not computed here: conlleval also counts the ``-DOCSTART-`` lines, which a test loader
does not serve (the scorer gives it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from harness.errors import HarnessError
from harness.predictions import KeptLists, Scoring, check_count
from tasks.conll2003.score import ChunkCounts, read_lines, sentence_counts

_STATES = ("correct", "gold", "guessed")


class ConllNerMetric(KeptLists, Metric):
    """``update(preds, target)``: per sentence, the predicted and the gold tag strings (IOB1 or IOB2)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    kept_lists = ("predicted",)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in _STATES:
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.predicted: list[list[str]] = []

    def update(self, preds: Sequence[Sequence[str]], target: Sequence[Sequence[str]]) -> None:
        if len(preds) != len(target):
            raise ValueError(f"{len(preds)} predicted sentences for {len(target)} gold ones")
        total = ChunkCounts()
        for guessed, gold in zip(preds, target, strict=True):
            total = total + sentence_counts(["w"] * len(gold), list(gold), list(guessed))
            self.predicted.append(list(guessed))
        self.correct += total.correct
        self.gold += total.gold
        self.guessed += total.guessed

    def compute(self) -> dict[str, Tensor]:
        counts = ChunkCounts(int(self.correct), int(self.gold), int(self.guessed))
        scores = counts.scores()
        return {key: torch.tensor(scores[key], dtype=torch.float64) for key in ("precision", "recall", "f1")}

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/predictions.txt``: the references file with each sentence's predicted tags appended, in order
        (``-DOCSTART-`` lines predicted ``O``); every sentence of the references needs its prediction."""
        check_count(len(self.predicted), scoring, "sentences")
        if len(self.predicted) < len(scoring.ids):
            raise HarnessError(
                f"ConllNerMetric: {len(self.predicted)} sentences predicted, {scoring.references} has "
                f"{len(scoring.ids)}"
            )
        out, sentence = [], 0
        lines = read_lines(Path(scoring.references), "CoNLL-2003 references")
        for number, line in enumerate(lines, start=1):
            if not line.strip() or line.startswith("-DOCSTART-"):
                out.append(f"{line} O" if line.strip() else "")
                continue
            if sentence < len(scoring.ids) - 1 and number >= scoring.ids[sentence + 1]:
                sentence += 1
            tags, position = self.predicted[sentence], number - scoring.ids[sentence]
            if position >= len(tags):
                raise HarnessError(
                    f"ConllNerMetric: {len(tags)} tags predicted for the sentence at line "
                    f"{scoring.ids[sentence]} of {scoring.references}, which is longer"
                )
            out.append(f"{line} {tags[position]}")
        path = Path(folder) / "predictions.txt"
        path.write_text("\n".join(out) + "\n", encoding="utf-8", newline="\n")
        return {"predictions": path}
