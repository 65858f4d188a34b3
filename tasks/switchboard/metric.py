"""Hub5'00 word error rate as a torchmetrics ``Metric``: accumulate per batch, compute once.

``update(preds, target, ids)`` takes hypothesis strings, the reference texts as the STM writes them (the data
module serves them unnormalised) and the segment ids (:func:`tasks.switchboard.score.segment_id`, which name the
subset: ``sw_*`` is ``swb``, ``en_*`` is ``ch``). Counts come from :func:`tasks.switchboard.score.segment_counts`,
the scorer's own normalisation (and GLM, when given), kept per subset so :meth:`Hub5WER.counts` returns every key of
the scorer. ``compute()`` is the overall WER in percent.

It keeps every hypothesis with its segment id, so :meth:`Hub5WER.write_predictions` writes the ``<segment-id>
WORDS`` file the scorer reads (``harness.predictions``), naming the GLM as the scorer's ``glm`` option.
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
from tasks.switchboard.score import COUNTS, NO_GLM, SUBSETS, Glm, scores, segment_counts, subset_of, write_hypotheses

GROUPS = ("other", *SUBSETS)  # "other": files of neither subset, counted in the overall WER only


class Hub5WER(KeptLists, Metric):
    """Corpus-level WER in percent over all segments seen; :meth:`counts` gives the scorer's keys."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    kept_lists = ("hypotheses", "segment_ids")

    def __init__(self, glm: str | Path | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.glm_path = Path(glm) if glm is not None else None
        self.glm = Glm.read(self.glm_path) if self.glm_path is not None else NO_GLM
        for group in GROUPS:
            for name in COUNTS:
                self.add_state(f"{group}_{name}", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.hypotheses: list[str] = []  # not states: strings do not sync across devices
        self.segment_ids: list[str] = []

    def update(self, preds: str | Sequence[str], target: str | Sequence[str], ids: str | Sequence[str]) -> None:
        """``ids``: the segments' ids, which say the subset of each (required, unlike LibriSpeech's)."""
        preds, target, ids = ([x] if isinstance(x, str) else list(x) for x in (preds, target, ids))
        if not len(preds) == len(target) == len(ids):
            raise ValueError(f"{len(preds)} predictions, {len(target)} references and {len(ids)} segment ids")
        self.hypotheses.extend(preds)
        self.segment_ids.extend(ids)
        for group in GROUPS:
            rows = [i for i, segment in enumerate(ids) if (subset_of(segment) or "other") == group]
            if rows:
                counts = segment_counts([target[i] for i in rows], [preds[i] for i in rows], self.glm)
                for name, value in counts.items():
                    state = f"{group}_{name}"
                    setattr(self, state, getattr(self, state) + value)

    def _group_counts(self) -> dict[str | None, dict[str, int]]:
        return {(None if g == "other" else g): {n: int(getattr(self, f"{g}_{n}")) for n in COUNTS} for g in GROUPS}

    def compute(self) -> Tensor:
        return torch.tensor(scores(self._group_counts())["wer"], dtype=torch.float64)

    def counts(self) -> dict[str, float]:
        """The scorer's keys: overall, ``swb`` and ``ch`` WER (percent) and the summed counts."""
        with self.sync_context():
            return scores(self._group_counts())

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/hypotheses.txt`` (one ``<segment-id> WORDS`` line per segment seen), and the GLM if any."""
        check_count(len(self.hypotheses), scoring, "hypotheses")
        if len(self.segment_ids) != len(self.hypotheses):
            raise HarnessError(f"Hub5WER: {len(self.hypotheses)} hypotheses but {len(self.segment_ids)} segment ids")
        path = write_hypotheses(Path(folder) / "hypotheses.txt", zip(self.segment_ids, self.hypotheses, strict=True))
        return {"predictions": path, **({"glm": self.glm_path} if self.glm_path is not None else {})}
