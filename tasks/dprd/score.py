"""Scorer of DPRD: accuracy (percent) of an ``id,prediction`` CSV (``0`` / ``1``: the candidate's index) against
``test.c.txt`` as distributed (format: ``tasks.dprd``)."""

from __future__ import annotations

from pathlib import Path

from tasks.dprd import LABELS
from tasks.text_files import score_answers


def score_dprd(references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy on a DPRD file (or the ``test.c.txt`` of a folder)."""
    from tasks.dprd.data import FILES, read_dprd

    references = Path(references)
    if references.is_dir():
        references = references / FILES["test"]
    gold = {record.id: LABELS[record.label] for record in read_dprd(references)}
    return score_answers(references, gold, predictions, ("id", "prediction"), LABELS)
