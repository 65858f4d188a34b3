"""Generic classification metrics, one place for every task and system that counts top-k accuracy: the image sets
(ImageNet, CIFAR, SVHN, ImageNet 32x32, Fashion-MNIST; re-exported by :mod:`tasks.imagenet.metric`) and the text
ones (the text-classification sets, GLUE-style accuracy / error of the XLNet, ULMFiT, GPT and ELMo systems). They
agree with the classification scorer :func:`tasks.imagenet.score.score` (whose ``id,prediction,p2..p5`` CSV they
write), the one the text-classification, CIFAR and transfer tasks score with too.

``top1``, ``top5`` and ``error`` in percent, micro-averaged over examples as the scorer counts them.

The top-1 metric also keeps each example's guesses, so :meth:`ClassificationMetrics.write_predictions` writes the
scorer's ``id,prediction,p2..p5`` CSV (see :mod:`harness.predictions`): ``prediction`` is the arg-max (the class
top-1 counted), ``p2..`` the rest of ``torch.topk``'s k classes (the set top-5 counted), best first. Only when
more than five classes tie for the highest score can the file's top-5 differ from the metric's.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy
from torchmetrics.utilities import dim_zero_cat

from harness.predictions import Scoring, check_count
from tasks.imagenet.score import GUESS_COLUMNS

TOP_K = 5


def ranked_guesses(preds: Tensor, k: int) -> Tensor:
    """``(N, C)`` scores -> ``(N, k)`` class indices: the arg-max first, then the other top-k classes in order;
    ``(N,)`` class indices -> ``(N, 1)``."""
    if preds.ndim == 1:
        return preds.long()[:, None]
    first = preds.argmax(dim=1, keepdim=True)
    top = preds.topk(k, dim=1).indices
    others = top != first
    order = torch.sort((~others).int(), dim=1, stable=True).indices  # the arg-max (when in top) moves last
    return torch.cat([first, top.gather(1, order)[:, : k - 1]], dim=1)


class GuessKeepingAccuracy(MulticlassAccuracy):
    """``MulticlassAccuracy`` (its value unchanged) that also keeps every example's top-``keep_k`` guesses."""

    def __init__(self, num_classes: int, keep_k: int = TOP_K, **kwargs: Any) -> None:
        super().__init__(num_classes=num_classes, **kwargs)
        self.keep_k = min(keep_k, num_classes)
        self.add_state("guesses", default=[], dist_reduce_fx="cat")

    def update(self, preds: Tensor, target: Tensor) -> None:
        super().update(preds, target)
        self.guesses.append(ranked_guesses(preds.detach(), self.keep_k))


class ClassificationMetrics(MetricCollection):
    """The ``top1`` / ``top5`` / ``error`` collection, able to write the predictions it saw."""

    def kept_guesses(self) -> Tensor:
        keeper = next(m for m in self.modules() if isinstance(m, GuessKeepingAccuracy))
        return dim_zero_cat(keeper.guesses).cpu() if keeper.guesses else torch.zeros(0, 1, dtype=torch.long)

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/predictions.csv``: ``id,prediction[,p2..p5]``, one row per example seen, ids in loader order."""
        guesses = self.kept_guesses()
        check_count(len(guesses), scoring)
        path = Path(folder) / "predictions.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["id", *GUESS_COLUMNS[: guesses.shape[1]]])
            for item_id, row in zip(scoring.ids, guesses.tolist(), strict=False):
                writer.writerow([item_id, *(scoring.label(index) for index in row)])
        return {"predictions": path}


def accuracy_metrics(num_classes: int, prefix: str = "") -> ClassificationMetrics:
    """A collection logging ``<prefix>top1``, ``<prefix>top5`` and ``<prefix>error`` from logits and labels."""

    def acc(k: int) -> MulticlassAccuracy:
        return MulticlassAccuracy(num_classes=num_classes, top_k=min(k, num_classes), average="micro")

    top1 = GuessKeepingAccuracy(num_classes=num_classes, top_k=1, average="micro")
    metrics = {"top1": 100 * top1, "top5": 100 * acc(5), "error": 100 - 100 * acc(1)}
    return ClassificationMetrics(metrics, prefix=prefix, compute_groups=False)


def accuracy_error_metrics(num_classes: int, prefix: str = "test/") -> ClassificationMetrics:
    """``<prefix>accuracy`` and ``<prefix>error`` in percent (the text classification scorers' keys); the first keeps
    the predictions, the second is its own instance (updated once)."""
    accuracy = GuessKeepingAccuracy(num_classes=num_classes, top_k=1, average="micro")
    top1 = MulticlassAccuracy(num_classes=num_classes, top_k=1, average="micro")
    return ClassificationMetrics({"accuracy": 100 * accuracy, "error": 100 - 100 * top1}, prefix=prefix,
                                 compute_groups=False)  # fmt: skip
