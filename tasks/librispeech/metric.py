"""LibriSpeech word error rate as a torchmetrics ``Metric``: accumulate per batch, compute once.

A drop-in for ``torchmetrics.text.WordErrorRate`` (same ``update(preds, target)`` with strings or lists of
strings, same corpus-level definition: summed edit operations over summed reference words), with the scorer's
normalisation (upper case, white space collapsed; ``tasks.librispeech.score.normalize``) and its alignment counts
(``jiwer.process_words``). ``compute()`` returns the WER in percent, as the papers print it and as the scorer's
``wer`` key holds it (``WordErrorRate`` returns a fraction); :meth:`LibriSpeechWER.counts` returns every key of
the scorer.

It also keeps every hypothesis (with its utterance id when ``update`` is given ``ids``, as
:class:`~tasks.librispeech.data.SpeechBatch` carries them), so :meth:`LibriSpeechWER.write_predictions` writes the
``<utterance-id> WORDS`` file the scorer reads (``harness.predictions``).
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
from tasks.librispeech.score import wer_percent, word_counts

COUNT_STATES = ("substitutions", "deletions", "insertions", "hits", "words", "utterances")


class LibriSpeechWER(KeptLists, Metric):
    """Corpus-level WER in percent over all utterances seen; :meth:`counts` gives the scorer's keys."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    kept_lists = ("hypotheses", "utterance_ids")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in COUNT_STATES:
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.hypotheses: list[str] = []  # not states: strings do not sync across devices
        self.utterance_ids: list[str] = []

    def update(
        self, preds: str | Sequence[str], target: str | Sequence[str], ids: str | Sequence[str] | None = None
    ) -> None:
        """``ids``: the utterances' ids (else the data module's order is assumed); they do not change the counts."""
        preds = [preds] if isinstance(preds, str) else list(preds)
        target = [target] if isinstance(target, str) else list(target)
        if len(preds) != len(target):
            raise ValueError(f"{len(preds)} predictions for {len(target)} reference transcripts")
        self.hypotheses.extend(preds)
        self.utterance_ids.extend([ids] if isinstance(ids, str) else list(ids or []))
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

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/hypotheses.txt``: one ``<utterance-id> WORDS`` line per utterance seen (white space collapsed)."""
        check_count(len(self.hypotheses), scoring, "hypotheses")
        ids = self.utterance_ids if self.utterance_ids else list(scoring.ids)
        if len(ids) < len(self.hypotheses):
            raise HarnessError(f"LibriSpeechWER: {len(self.hypotheses)} hypotheses but {len(ids)} utterance ids")
        path = Path(folder) / "hypotheses.txt"
        lines = (f"{u} {' '.join(text.split())}".rstrip() + "\n" for u, text in zip(ids, self.hypotheses, strict=False))
        path.write_text("".join(lines), encoding="utf-8")
        return {"predictions": path}
