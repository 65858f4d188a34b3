"""Official-format scorers for CIFAR-10, CIFAR-100, SVHN and ImageNet 32x32: top-1 / top-5 accuracy, in percent.

The protocol and file formats are ImageNet's (``tasks.imagenet.score``, whose CSV readers this module uses):
references ``id,label``, predictions ``id,prediction[,p2..p5]``, an image counts at top-k when its label is among
the first k guesses, ``error = 100 - top1``. A reference id without a prediction counts as wrong (with a warning);
a prediction for an unknown id is an error naming its line.

``references`` may also be the dataset folder (see ``tasks.classification`` for each layout): its test split is
read and every image is a reference, id = its 0-based position in the test file(s), label = its class index as a
decimal string (SVHN: the digit, ImageNet 32x32: the file's label minus one).

The scoring itself is :func:`tasks.imagenet.score.score_labels`, shared with ``tasks.text_classification``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.errors import HarnessError
from tasks.imagenet.score import read_references, score_labels


def read_reference_labels(task_id: str, references: Path) -> dict[str, str]:
    """``id -> label`` from an ``id,label`` CSV, or from the test split of the dataset folder ``references``."""
    references = Path(references)
    if references.is_dir():
        from tasks.classification.data import load_split

        split = load_split(task_id, references, "test")
        return {str(index): str(int(label)) for index, label in enumerate(split.labels)}
    return read_references(references)


def score(task_id: str, references: Path, predictions: Path) -> dict[str, float]:
    """Score ``predictions`` for the dataset ``task_id`` (``cifar-10``, ``cifar-100``, ``svhn``, ``imagenet-32``)."""
    from tasks.classification import LAYOUTS

    if task_id not in LAYOUTS:
        raise HarnessError(f"unknown small-image task {task_id!r}; known: {', '.join(LAYOUTS)}")
    return score_labels(read_reference_labels(task_id, references), references, predictions, stacklevel=4)


def _scorer(task_id: str) -> Callable[[Path, Path], dict[str, float]]:
    def scorer(references: Path, predictions: Path) -> dict[str, float]:
        return score(task_id, references, predictions)

    scorer.__name__ = scorer.__qualname__ = f"score_{task_id.replace('-', '_')}"
    scorer.__doc__ = f"Top-1 / top-5 accuracy and error (percent) on {task_id}; see the module docstring."
    return scorer


score_cifar_10 = _scorer("cifar-10")
score_cifar_100 = _scorer("cifar-100")
score_svhn = _scorer("svhn")
score_imagenet_32 = _scorer("imagenet-32")
