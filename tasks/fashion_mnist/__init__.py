"""Fashion-MNIST (Xiao, Rasul & Vollgraf, arXiv 1708.07747): 28x28 grey images of 10 clothing classes, 60,000 for
training and 10,000 for test, in the IDX files of the original distribution (Debian: ``dataset-fashion-mnist``,
under ``/usr/share/datasets/fashion-mnist``). Scored by top-1 / top-5 accuracy on the test set.

Scoring follows ``tasks.imagenet.score``: references ``id,label`` (or the dataset folder, whose test split is read:
id = the 0-based position of the image in ``t10k-images-idx3-ubyte``, label = its class index), predictions
``id,prediction[,p2..p5]``; keys ``top1``, ``top5`` and ``error`` (= 100 - top1), percentages.

It is the dataset of the budget tiers that test a paper's small-scale delta or trend claim on real data this
machine has. This module is imported to list the registry: it imports nothing heavy.
"""

from __future__ import annotations

from harness.registry import Task

FASHION_MNIST = Task(
    id="fashion-mnist",
    title="Fashion-MNIST",
    score="tasks.fashion_mnist.score:score",
    keys=("top1", "top5", "error"),
    example="tasks.classification.fixtures:example",
    data="tasks.fashion_mnist.data:ArrayDataModule",
    metric="tasks.metrics:accuracy_metrics",
    version=1,
)
