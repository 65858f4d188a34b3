"""Official-format scorers of RACE (all, middle, high) and the Story Cloze Test: accuracy (percent) of a prediction
CSV against the test split as distributed (formats: ``tasks.multiple_choice``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tasks.multiple_choice import CLOZE_LABELS, RACE_LABELS, RACE_LEVELS
from tasks.text_files import score_answers


def race_accuracy(task_id: str, references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy of ``id,prediction`` (letters A-D) on a RACE split folder (or the RACE folder's ``test``)."""
    from tasks.multiple_choice.data import race_folder, read_race

    references = Path(references)
    if (race_folder(references) / "test").is_dir():
        references = race_folder(references) / "test"
    gold = {record.id: RACE_LABELS[record.label] for record in read_race(references, RACE_LEVELS[task_id])}
    return score_answers(references, gold, predictions, ("id", "prediction"), RACE_LABELS)


def _race_scorer(task_id: str) -> Callable[[Path, Path], dict[str, float]]:
    def scorer(references: Path, predictions: Path) -> dict[str, float]:
        return race_accuracy(task_id, references, predictions)

    scorer.__name__ = scorer.__qualname__ = f"score_{task_id.replace('-', '_')}"
    scorer.__doc__ = f"Accuracy on {task_id}; see the module docstring."
    return scorer


score_race = _race_scorer("race")
score_race_m = _race_scorer("race-m")
score_race_h = _race_scorer("race-h")


def score_story_cloze(references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy of ``InputStoryid,AnswerRightEnding`` rows on a Story Cloze CSV (or its folder's test CSV)."""
    from tasks.multiple_choice.data import cloze_file, read_cloze

    references = Path(references)
    if references.is_dir():
        references = references / cloze_file(references, "test")
    gold = {record.id: CLOZE_LABELS[record.label] for record in read_cloze(references)}
    return score_answers(references, gold, predictions, ("InputStoryid", "AnswerRightEnding"), CLOZE_LABELS)
