"""Official-format scorer for Fashion-MNIST's test set: top-1 / top-5 accuracy and error, in percent.

``references`` is an ``id,label`` CSV or the dataset folder (its test split is read: id = 0-based position,
label = class index). The scoring itself is :func:`tasks.imagenet.score.score_labels`.
"""

from __future__ import annotations

from pathlib import Path

from tasks.imagenet.score import read_references, score_labels


def read_reference_labels(references: Path) -> dict[str, str]:
    references = Path(references)
    if references.is_dir():
        from tasks.fashion_mnist.data import read_idx_split

        _, labels = read_idx_split(references, "test")
        return {str(index): str(int(label)) for index, label in enumerate(labels)}
    return read_references(references)


def score(references: Path, predictions: Path) -> dict[str, float]:
    """Top-1 / top-5 accuracy and error (percent) of ``predictions`` on Fashion-MNIST's test set."""
    return score_labels(read_reference_labels(references), references, predictions, stacklevel=3)
