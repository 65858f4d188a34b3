"""Official-format scorers of SNLI and SciTail: accuracy (percent) of an ``id,prediction`` CSV against the test file
as distributed (see ``tasks.entailment`` for both formats and the prediction file)."""

from __future__ import annotations

from pathlib import Path

from tasks.entailment import SCITAIL_LABELS, SNLI_LABELS
from tasks.text_files import score_answers


def score_snli(references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy on an SNLI ``.jsonl`` file (pairs labelled ``-`` are not scored), or a folder's test file."""
    from tasks.entailment.data import read_snli, snli_file, snli_folder

    references = Path(references)
    if references.is_dir():
        references = snli_folder(references) / snli_file("test")
    gold = {record.id: SNLI_LABELS[record.label] for record in read_snli(references)}
    return score_answers(references, gold, predictions, ("id", "prediction"), SNLI_LABELS)


def score_scitail(references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy on a SciTail ``tsv_format`` file (ids: 0-based line numbers), or a folder's test file."""
    from tasks.entailment.data import read_scitail, scitail_file, scitail_folder

    references = Path(references)
    if references.is_dir():
        references = scitail_folder(references) / scitail_file("test")
    gold = {record.id: SCITAIL_LABELS[record.label] for record in read_scitail(references)}
    return score_answers(references, gold, predictions, ("id", "prediction"), SCITAIL_LABELS)
