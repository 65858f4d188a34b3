"""Official-format scorers for Food-101 and Oxford-IIIT Pets: top-1 / top-5 accuracy and error, in percent.

The protocol and CSV formats are ImageNet's (``tasks.imagenet.score``): references ``id,label``, predictions
``id,prediction[,p2..p5]``, an image counts at top-k when its label is among the first k guesses. ``references``
may also be the dataset folder (see ``tasks.transfer``): its official test list is read, ids are the list entries
and labels the class indices as decimal strings. (CIFAR-10/100 keep the scorers of ``tasks.classification``.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tasks.imagenet.score import read_references, score_labels


def read_reference_labels(task_id: str, references: Path) -> dict[str, str]:
    """``id -> label`` from an ``id,label`` CSV, or from the test list of the dataset folder ``references``."""
    references = Path(references)
    if references.is_dir():
        from tasks.transfer.data import read_listing

        listing = read_listing(task_id, references, "test")
        return {item_id: str(label) for item_id, label in zip(listing.ids, listing.labels, strict=True)}
    return read_references(references)


def score(task_id: str, references: Path, predictions: Path) -> dict[str, float]:
    """Score ``predictions`` for ``food-101`` or ``oxford-pets``."""
    return score_labels(read_reference_labels(task_id, references), references, predictions, stacklevel=4)


def _scorer(task_id: str) -> Callable[[Path, Path], dict[str, float]]:
    def scorer(references: Path, predictions: Path) -> dict[str, float]:
        return score(task_id, references, predictions)

    scorer.__name__ = scorer.__qualname__ = f"score_{task_id.replace('-', '_')}"
    scorer.__doc__ = f"Top-1 / top-5 accuracy and error (percent) on {task_id}; see the module docstring."
    return scorer


score_food_101 = _scorer("food-101")
score_oxford_pets = _scorer("oxford-pets")
