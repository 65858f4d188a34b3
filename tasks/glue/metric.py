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
"""

from __future__ import annotations

from collections.abc import Callable

from torchmetrics import Metric, MetricCollection
from torchmetrics.classification import BinaryF1Score, BinaryMatthewsCorrCoef, MulticlassAccuracy
from torchmetrics.regression import PearsonCorrCoef, SpearmanCorrCoef

from tasks.glue import LAYOUTS, GlueLayout

_MAKERS: dict[str, Callable[[GlueLayout], Metric]] = {
    "accuracy": lambda spec: MulticlassAccuracy(num_classes=len(spec.labels or ()), average="micro"),
    "f1": lambda spec: BinaryF1Score(),
    "mcc": lambda spec: BinaryMatthewsCorrCoef(),
    "pearson": lambda spec: PearsonCorrCoef(),
    "spearman": lambda spec: SpearmanCorrCoef(),
}


def glue_metrics(task: str) -> MetricCollection:
    """The metrics of GLUE task ``task`` (``glue-cola`` or ``cola`` …), keyed by the scorer's names, ×100."""
    task_id = task if task.startswith("glue-") else f"glue-{task}"
    if task_id not in LAYOUTS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {', '.join(LAYOUTS)}")
    spec = LAYOUTS[task_id]
    # ``metric * 100`` is a CompositionalMetric: it updates the wrapped metric and scales its result.
    return MetricCollection({name: _MAKERS[name](spec) * 100 for name in spec.metrics}, compute_groups=False)
