"""Top-k accuracy during training, agreeing with :func:`tasks.imagenet.score.score` (used by every image and text
classification task: ImageNet, CIFAR, SVHN, ImageNet 32x32, the text-classification sets).

``top1``, ``top5`` and ``error`` in percent, micro-averaged over examples as the scorer counts them.
"""

from __future__ import annotations

from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy


def accuracy_metrics(num_classes: int, prefix: str = "") -> MetricCollection:
    """A collection logging ``<prefix>top1``, ``<prefix>top5`` and ``<prefix>error`` from logits and labels."""

    def acc(k: int) -> MulticlassAccuracy:
        return MulticlassAccuracy(num_classes=num_classes, top_k=min(k, num_classes), average="micro")

    metrics = {"top1": 100 * acc(1), "top5": 100 * acc(5), "error": 100 - 100 * acc(1)}
    return MetricCollection(metrics, prefix=prefix, compute_groups=False)
