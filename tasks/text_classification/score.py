"""Official-format scorers for IMDb, Yelp-2, Yelp-5, Amazon-2, Amazon-5, AG News, DBpedia and TREC-6: accuracy and
error, in percent.

``accuracy`` is the share of test examples whose ``prediction`` equals the reference label (compared as strings
after stripping white space); ``error = 100 - accuracy``, the number ULMFiT's Table 2 and UDA's tables print.
References ``id,label`` or the dataset folder (its test split; see ``tasks.text_classification``), predictions
``id,prediction``. The reading and checking is ``tasks.imagenet.score.score_labels``'s (``tasks.imagenet``'s
CSV reader): a reference id without a prediction counts as wrong, with a warning; a prediction for an unknown id,
a duplicate id or a malformed row raises :class:`HarnessError` naming the file and line.
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
        from tasks.text_classification.data import read_split

        return {example.id: str(example.label) for example in read_split(task_id, references, "test")}
    return read_references(references)


def score(task_id: str, references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy and error (percent) of ``predictions`` for the dataset ``task_id``."""
    from tasks.text_classification import LAYOUTS

    if task_id not in LAYOUTS:
        raise HarnessError(f"unknown text-classification task {task_id!r}; known: {', '.join(LAYOUTS)}")
    result = score_labels(read_reference_labels(task_id, references), references, predictions, stacklevel=4)
    return {"error": result["error"], "accuracy": result["top1"]}


def _scorer(task_id: str) -> Callable[[Path, Path], dict[str, float]]:
    def scorer(references: Path, predictions: Path) -> dict[str, float]:
        return score(task_id, references, predictions)

    scorer.__name__ = scorer.__qualname__ = f"score_{task_id.replace('-', '_')}"
    scorer.__doc__ = f"Accuracy and error (percent) on {task_id}; see the module docstring."
    return scorer


score_imdb = _scorer("imdb")
score_yelp_2 = _scorer("yelp-2")
score_yelp_5 = _scorer("yelp-5")
score_amazon_2 = _scorer("amazon-2")
score_amazon_5 = _scorer("amazon-5")
score_ag_news = _scorer("ag-news")
score_dbpedia = _scorer("dbpedia")
score_trec_6 = _scorer("trec-6")
