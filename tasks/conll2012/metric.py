"""SRL and coreference scores of CoNLL-2012 as torchmetrics ``Metric`` s: accumulate per batch, compute once.

Both compute with the scorers' own functions on what the written response file holds, so ``harness score`` on the
file :meth:`write_predictions` writes gives their values:

- :class:`SrlMetric` ``update(preds, target, ids=None)``: per sentence, ``{predicate position: [(label, first,
  last), ...]}`` of predicted and of gold phrases (the data module's ``frames`` as a dict). A predicate's phrases are
  written as a Start-End column and read back as srl-eval reads them; a predicted ``V`` is always the one token at
  the predicate position (``V`` is not scored). The response keeps the key's eleven first columns, then one column
  per predicted predicate, then ``-``.
- :class:`CorefMetric` ``update(preds, target, ids=None)``: per document, clusters of ``(first, last)`` token
  positions over the document. Predicted clusters are written as last-column cells and read back as the reference
  scorer reads them; a response mention repeated in another cluster is dropped as the scorer drops it (the scorer
  refuses a file with more than ten; the metric does not). The response is the key with its last column replaced.

``ids``: the sentence (``"<document>:<n>"``) or document ids of the batch; without them, the data module's order
(:meth:`scoring` ids) is assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from harness.errors import HarnessError
from harness.predictions import KeptLists, Scoring, check_count
from tasks.conll2012 import coref, srl
from tasks.conll2012.reader import FIRST_ARGUMENT, read_documents

Frames = Mapping[int, Sequence[tuple[str, int, int]]]
Clusters = Sequence[Sequence[tuple[int, int]]]


def _length(*groups: Any) -> int:
    ends = [span[-1] for group in groups for spans in group for span in spans]
    return max(ends, default=0) + 1


def predicted_columns(frames: Frames, length: int) -> dict[int, list[str]]:
    """One Start-End column per predicted predicate, ``V`` only at the predicate position."""
    return {p: srl.start_end_column([*(s for s in spans if s[0] != "V"), ("V", p, p)], length)
            for p, spans in sorted(frames.items())}  # fmt: skip


def _as_read(columns: Mapping[int, list[str]]) -> dict[int, list[srl.Phrase]]:
    return {p: srl.arguments(srl.read_phrases(column)) for p, column in columns.items()}


def _response_rows(rows: list[list[str]], cells: Sequence[Sequence[str]], keep_last: bool) -> list[str]:
    out = []
    for i, row in enumerate(rows):
        middle = row[:-1] if keep_last else row[:FIRST_ARGUMENT]
        out.append("   ".join([*middle, *(column[i] for column in cells)]))
    return out


class _ResponseMetric(KeptLists, Metric):
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    kept_lists = ("predicted", "ids")

    def _keep(self, preds: Sequence[Any], target: Sequence[Any], ids: Sequence[str] | None) -> None:
        if len(preds) != len(target) or (ids is not None and len(ids) != len(preds)):
            raise ValueError(f"{len(preds)} predictions, {len(target)} targets, {len(ids or preds)} ids")
        self.predicted.extend(preds)
        self.ids.extend(ids or [])

    def _by_id(self, scoring: Scoring) -> dict[str, Any]:
        check_count(len(self.predicted), scoring)
        ids = self.ids or list(scoring.ids)
        kept = dict(zip(ids, self.predicted, strict=False))
        missing = [i for i in scoring.ids if i not in kept]
        if missing:
            raise HarnessError(f"{type(self).__name__}: no prediction for {len(missing)} of {len(scoring.ids)} "
                               f"items of {scoring.references}, e.g. {missing[0]!r}")  # fmt: skip
        return kept


class SrlMetric(_ResponseMetric):
    """srl-eval's ``precision``, ``recall``, ``f1`` over the sentences seen (percentages)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in ("correct", "excess", "missed"):
            self.add_state(name, default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.predicted: list[Frames] = []
        self.ids: list[str] = []

    def update(self, preds: Sequence[Frames], target: Sequence[Frames], ids: Sequence[str] | None = None) -> None:
        self._keep(preds, target, ids)
        for predicted, gold in zip(preds, target, strict=True):
            length = _length(predicted.values(), gold.values(), [[(p,) for p in (*predicted, *gold)]])
            gold_columns = {p: srl.start_end_column(spans, length) for p, spans in gold.items()}
            outcome = srl.evaluate_sentence(_as_read(gold_columns), _as_read(predicted_columns(predicted, length)))
            ok, op, ms = outcome.totals()
            self.correct += ok
            self.excess += op
            self.missed += ms

    def compute(self) -> dict[str, Tensor]:
        outcome = srl.Outcome(ok={"A": int(self.correct)}, op={"A": int(self.excess)}, ms={"A": int(self.missed)})
        scores = outcome.scores()
        return {key: torch.tensor(scores[key], dtype=torch.float64) for key in ("precision", "recall", "f1")}

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/response.v4_conll``: every key sentence with its predicted predicate-argument columns."""
        kept = self._by_id(scoring)
        lines: list[str] = []
        for doc in read_documents(scoring.references):
            lines.append(f"#begin document {doc.name}")
            for index, sentence in enumerate(doc.sentences):
                columns = predicted_columns(kept[f"{doc.name}:{index}"], len(sentence.rows))
                rows = [[*row[:FIRST_ARGUMENT], "-"] for row in sentence.rows]
                lines += [*_response_rows(rows, [*columns.values(), ["-"] * len(rows)], keep_last=False), ""]
            lines.append("#end document")
        path = Path(folder) / "response.v4_conll"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
        return {"predictions": path}


class CorefMetric(_ResponseMetric):
    """The reference scorer's ``f1`` (mean of MUC, B³ and CEAFφ4 F1) and each metric's recall, precision and F1."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name in coref.METRICS:
            self.add_state(name, default=torch.zeros(4, dtype=torch.float64), dist_reduce_fx="sum")
        self.predicted: list[Clusters] = []
        self.ids: list[str] = []

    def update(self, preds: Sequence[Clusters], target: Sequence[Clusters], ids: Sequence[str] | None = None) -> None:
        self._keep(preds, target, ids)
        for predicted, gold in zip(preds, target, strict=True):
            length = _length(predicted, gold)
            doc = coref.identify(coref.normalised(gold, length), coref.normalised(predicted, length), limit=None)
            for name, counts in coref.document_counts(doc).items():
                if name in coref.METRICS:
                    setattr(self, name, getattr(self, name) + torch.tensor(counts, dtype=torch.float64))

    def compute(self) -> dict[str, Tensor]:
        totals = {name: coref.Counts(*getattr(self, name).tolist()) for name in coref.METRICS}
        scores: dict[str, float] = {}
        for name in coref.METRICS:
            scores.update(totals[name].scores(name))
        scores["f1"] = (scores["muc_f1"] + scores["bcub_f1"] + scores["ceafe_f1"]) / 3
        return {key: torch.tensor(value, dtype=torch.float64) for key, value in scores.items()}

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/response.v4_conll``: the key documents, the last column holding the predicted clusters."""
        kept = self._by_id(scoring)
        lines: list[str] = []
        for doc in read_documents(scoring.references):
            cells = coref.cells(kept[doc.name], len(doc.rows()))
            lines.append(f"#begin document {doc.name}")
            start = 0
            for sentence in doc.sentences:
                rows = sentence.rows
                lines += [*_response_rows(rows, [cells[start : start + len(rows)]], keep_last=True), ""]
                start += len(rows)
            lines.append("#end document")
        path = Path(folder) / "response.v4_conll"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
        return {"predictions": path}
