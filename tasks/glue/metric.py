"""GLUE metrics as a torchmetrics ``MetricCollection``: accumulate per batch, compute once, ×100.

``glue_metrics(task)`` holds one metric per key of the task (``tasks.glue.LAYOUTS[task].metrics``), each the
torchmetrics counterpart of the scorer's (``tasks.glue.score``) definition:

- ``accuracy``: ``MulticlassAccuracy(average="micro")``, the plain share of correct predictions;
- ``f1``: ``BinaryF1Score``, F1 of class index 1 (label ``"1"``, MRPC/QQP);
- ``mcc``: ``BinaryMatthewsCorrCoef`` (CoLA);
- ``pearson`` / ``spearman``: ``PearsonCorrCoef`` / ``SpearmanCorrCoef`` (STS-B; ties get average ranks).

``update(preds, target)``: classification tasks take integer class indices in the order of the task's
``labels`` (``tasks.glue``); STS-B takes float scores. In degenerate cases the two may differ: when every
prediction and every gold label is the same class, torchmetrics gives MCC 1 (all right) or -1 (all wrong)
where sklearn's ``matthews_corrcoef`` (the GLUE definition the scorer uses) gives 0; a correlation of constant
scores is NaN here and an error in the scorer.

The task's first metric also keeps every prediction (a class index, or STS-B's score), so
:meth:`GlueMetrics.write_predictions` writes the submission TSV the scorer reads (``harness.predictions``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch import Tensor
from torchmetrics import Metric, MetricCollection
from torchmetrics.classification import BinaryF1Score, BinaryMatthewsCorrCoef, MulticlassAccuracy
from torchmetrics.regression import PearsonCorrCoef, SpearmanCorrCoef
from torchmetrics.utilities import dim_zero_cat

from harness.predictions import Scoring, check_count
from tasks.glue import LAYOUTS, GlueLayout
from tasks.glue.score import write_predictions


class _KeepsPredictions:
    """Mixed in ahead of a torchmetrics metric: its value unchanged, it also keeps every prediction it is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_state("kept", default=[], dist_reduce_fx="cat")

    def update(self, preds: Tensor, target: Tensor) -> None:
        super().update(preds, target)
        self.kept.append(preds.detach().reshape(-1))


class KeptAccuracy(_KeepsPredictions, MulticlassAccuracy):
    """``MulticlassAccuracy`` keeping its predictions."""


class KeptF1(_KeepsPredictions, BinaryF1Score):
    """``BinaryF1Score`` keeping its predictions."""


class KeptMCC(_KeepsPredictions, BinaryMatthewsCorrCoef):
    """``BinaryMatthewsCorrCoef`` keeping its predictions."""


class KeptPearson(_KeepsPredictions, PearsonCorrCoef):
    """``PearsonCorrCoef`` keeping its predictions."""


# name -> (plain maker, the same metric keeping its predictions)
_MAKERS: dict[str, tuple[Callable[[GlueLayout], Metric], Callable[[GlueLayout], Metric]]] = {
    "accuracy": (
        lambda spec: MulticlassAccuracy(num_classes=len(spec.labels or ()), average="micro"),
        lambda spec: KeptAccuracy(num_classes=len(spec.labels or ()), average="micro"),
    ),
    "f1": (lambda spec: BinaryF1Score(), lambda spec: KeptF1()),
    "mcc": (lambda spec: BinaryMatthewsCorrCoef(), lambda spec: KeptMCC()),
    "pearson": (lambda spec: PearsonCorrCoef(), lambda spec: KeptPearson()),
    "spearman": (lambda spec: SpearmanCorrCoef(), lambda spec: SpearmanCorrCoef()),  # never a task's first
}


class GlueMetrics(MetricCollection):
    """A GLUE task's metrics, able to write the predictions they saw."""

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/predictions.tsv``: ``index<TAB>prediction``, labels as the dev file writes them (STS-B: the
        score), one row per example seen, ids in loader order."""
        keeper = next(m for m in self.modules() if isinstance(m, _KeepsPredictions))
        preds = dim_zero_cat(keeper.kept).cpu().tolist() if keeper.kept else []
        check_count(len(preds), scoring)
        regression = isinstance(keeper, KeptPearson)
        rows = {
            int(item_id): float(p) if regression else scoring.label(int(p))
            for item_id, p in zip(scoring.ids, preds, strict=False)
        }
        return {"predictions": write_predictions(Path(folder) / "predictions.tsv", rows)}


def glue_metrics(task: str) -> MetricCollection:
    """The metrics of GLUE task ``task`` (``glue-cola`` or ``cola`` …), keyed by the scorer's names, ×100."""
    task_id = task if task.startswith("glue-") else f"glue-{task}"
    if task_id not in LAYOUTS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {', '.join(LAYOUTS)}")
    spec = LAYOUTS[task_id]
    # ``metric * 100`` is a CompositionalMetric: it updates the wrapped metric and scales its result.
    metrics = {name: _MAKERS[name][index == 0](spec) * 100 for index, name in enumerate(spec.metrics)}
    return GlueMetrics(metrics, compute_groups=False)
