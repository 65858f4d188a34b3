"""LibriSpeech word error rate as a torchmetrics ``Metric``: accumulate per batch, compute once.

A drop-in for ``torchmetrics.text.WordErrorRate`` (same ``update(preds, target)`` with strings or lists of
strings, same corpus-level definition: summed edit operations over summed reference words), with the scorer's
normalisation (upper case, white space collapsed; ``tasks.librispeech.score.normalize``) and its alignment counts
(``jiwer.process_words``). ``compute()`` returns the WER in percent, as the papers print it and as the scorer's
``wer`` key holds it (``WordErrorRate`` returns a fraction); :meth:`LibriSpeechWER.counts` returns every key of
the scorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from tasks.librispeech.score import wer_percent, word_counts

COUNT_STATES = ("substitutions", "deletions", "insertions", "hits", "words", "utterances")


class LibriSpeechWER(Metric):
    """Corpus-level WER in percent over all utterances seen; :meth:`counts` gives the scorer's keys."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in COUNT_STATES:
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: str | Sequence[str], target: str | Sequence[str]) -> None:
        preds = [preds] if isinstance(preds, str) else list(preds)
        target = [target] if isinstance(target, str) else list(target)
        if len(preds) != len(target):
            raise ValueError(f"{len(preds)} predictions for {len(target)} reference transcripts")
        for name, value in word_counts(target, preds).items():
            setattr(self, name, getattr(self, name) + value)

    def compute(self) -> Tensor:
        errors = self.substitutions + self.deletions + self.insertions
        return 100.0 * errors.double() / self.words.double()

    def counts(self) -> dict[str, float]:
        """The scorer's keys: ``wer`` (percent) and the summed counts (synchronised across processes)."""
        with self.sync_context():
            values = {name: int(getattr(self, name)) for name in COUNT_STATES}
        return {"wer": wer_percent(values), **values}
