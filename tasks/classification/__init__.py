"""Small-image classification: CIFAR-10, CIFAR-100, SVHN and ImageNet 32x32, scored by top-1 / top-5 accuracy.

Datasets, each in the format its authors distribute (``LAYOUTS`` below names every file):

- CIFAR-10 / CIFAR-100: Krizhevsky, "Learning Multiple Layers of Features from Tiny Images", 2009
  (https://www.cs.toronto.edu/~kriz/cifar.html), "python version": pickled dicts whose ``data`` is a uint8
  (N, 3072) array, each row the 1024 red, then green, then blue values of a 32x32 image in row-major order, and
  ``labels`` (CIFAR-10) or ``fine_labels`` (CIFAR-100, 100 classes; ``coarse_labels`` are the 20 superclasses) a
  list of class indices from 0. 50,000 training images (CIFAR-10 in ``data_batch_1`` .. ``data_batch_5``,
  CIFAR-100 in ``train``) and 10,000 test images (``test_batch`` / ``test``).
- SVHN: Netzer et al., "Reading Digits in Natural Images with Unsupervised Feature Learning", NIPS workshop 2011
  (http://ufldl.stanford.edu/housenumbers/), format 2 "cropped digits": MATLAB files ``train_32x32.mat`` (73,257),
  ``test_32x32.mat`` (26,032) and ``extra_32x32.mat`` (531,131) with ``X`` uint8 (32, 32, 3, N) and ``y`` (N, 1)
  in 1..10, where "'0' has label 10"; the class index here is the digit (label 10 becomes 0).
- ImageNet 32x32: Chrabaszcz, Loshchilov & Hutter, "A Downsampled Variant of ImageNet as an Alternative to the
  CIFAR datasets", arXiv 1707.08819 (files from image-net.org, written by ``image2numpy_imagenet_*.py`` of
  github.com/PatrykChrabaszcz/Imagenet32_Scripts): pickled dicts ``Imagenet32_train/train_data_batch_1`` .. ``_10``
  (1,281,167 images; with the training ``mean`` image) and ``Imagenet32_val/val_data`` (50,000), ``data`` laid out
  as CIFAR's, ``labels`` in 1..1000 (the order of that repository's ``map_clsloc.txt``, not sorted wnids); the class
  index here is ``label - 1``. The validation set is the test set, as in the paper.

Scoring follows ``tasks.imagenet.score`` (whose reader it uses): references ``id,label``, predictions
``id,prediction[,p2..p5]``; keys ``top1``, ``top5`` and ``error`` (= 100 - top1), percentages. The references may
instead be the dataset folder: its test split is read, ids are the 0-based positions of the images in the test
file(s) and labels the class indices above, written as decimal strings.

This module is imported to list the registry: it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.registry import Task

KEYS = ("top1", "top5", "error")


@dataclass(frozen=True)
class ArrayLayout:
    """Where a small-image dataset's files are, relative to the data root, and how to read them."""

    task_id: str
    title: str
    format: str  # "cifar-pickle", "svhn-mat" or "imagenet32-pickle"
    num_classes: int
    train: tuple[str, ...]
    test: tuple[str, ...]
    label_key: str
    label_offset: int  # subtracted from the file's labels (ImageNet 32x32 counts from 1)
    flip: bool  # whether a horizontal flip keeps the label (not for digits)
    extra: tuple[str, ...] = ()


def _numbered(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


LAYOUTS: dict[str, ArrayLayout] = {
    layout.task_id: layout
    for layout in (
        ArrayLayout(
            "cifar-10",
            "CIFAR-10",
            "cifar-pickle",
            10,
            _numbered("cifar-10-batches-py/data_batch_", 5),
            ("cifar-10-batches-py/test_batch",),
            "labels",
            0,
            True,
        ),
        ArrayLayout(
            "cifar-100",
            "CIFAR-100 (fine labels)",
            "cifar-pickle",
            100,
            ("cifar-100-python/train",),
            ("cifar-100-python/test",),
            "fine_labels",
            0,
            True,
        ),
        ArrayLayout(
            "svhn",
            "SVHN (cropped digits)",
            "svhn-mat",
            10,
            ("train_32x32.mat",),
            ("test_32x32.mat",),
            "y",
            0,
            False,
            extra=("extra_32x32.mat",),
        ),
        ArrayLayout(
            "imagenet-32",
            "ImageNet 32x32 (Downsampled ImageNet)",
            "imagenet32-pickle",
            1000,
            _numbered("Imagenet32_train/train_data_batch_", 10),
            ("Imagenet32_val/val_data",),
            "labels",
            1,
            True,
        ),
    )
}


def _task(task_id: str) -> Task:
    return Task(
        id=task_id,
        title=LAYOUTS[task_id].title,
        score=f"tasks.classification.score:score_{task_id.replace('-', '_')}",
        keys=KEYS,
        example="tasks.classification.fixtures:example",
        data="tasks.classification.data:ClassificationDataModule",
        metric="tasks.metrics:accuracy_metrics",
        version=1,
    )


CIFAR_10 = _task("cifar-10")
CIFAR_100 = _task("cifar-100")
SVHN = _task("svhn")
IMAGENET_32 = _task("imagenet-32")
