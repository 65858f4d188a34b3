"""Official-format scorer of SST-5: accuracy (percent) of an ``id,prediction`` CSV against ``trees/test.txt`` (root
labels; see ``tasks.sst``)."""

from __future__ import annotations

from pathlib import Path

from tasks.sst import LABELS
from tasks.text_files import score_answers


def score_sst5(references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy on an SST trees file (or the test file of a folder holding ``trees/``)."""
    from tasks.sst.data import TREES, read_trees

    references = Path(references)
    if references.is_dir():
        references = references / TREES / "test.txt" if (references / TREES).is_dir() else references / "test.txt"
    gold = {record.id: LABELS[record.label] for record in read_trees(references)}
    return score_answers(references, gold, predictions, ("id", "prediction"), LABELS)
