"""Golden values and reference folders for the text-classification scorers (tasks.text_classification.score)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tasks.text_classification as text_classification
from harness.errors import HarnessError
from harness.registry import load_object
from tasks.text_classification.data import read_split
from tasks.text_classification.fixtures import write_tiny_text_classification
from tasks.text_classification.score import score

TASKS = [
    text_classification.IMDB,
    text_classification.YELP_2,
    text_classification.YELP_5,
    text_classification.AG_NEWS,
    text_classification.DBPEDIA,
    text_classification.TREC_6,
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.id)
def test_example_scores_to_the_task_keys(task, tmp_path: Path) -> None:
    files = load_object(task.example)(tmp_path, task.id)
    result = task.scorer()(files["references"], files["predictions"])
    assert result == {"error": 25.0, "accuracy": 75.0}
    assert tuple(result) == task.keys and all(math.isfinite(v) for v in result.values())


@pytest.mark.parametrize("dataset", sorted(text_classification.LAYOUTS))
def test_dataset_folder_as_references(dataset: str, tmp_path: Path) -> None:
    root = write_tiny_text_classification(tmp_path / "data", dataset)
    examples = read_split(dataset, root, "test")
    rows = [f"{e.id},{e.label if i else e.label + 1}" for i, e in enumerate(examples)]  # only the first wrong
    result = score(dataset, root, write(tmp_path, "pred.csv", "id,prediction\n" + "\n".join(rows) + "\n"))
    assert result["error"] == pytest.approx(100 / len(examples))
    assert result["accuracy"] == pytest.approx(100 - 100 / len(examples))


def test_only_the_prediction_column_counts(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.csv", "id,label\na,1\nb,0\n")
    preds = write(tmp_path, "pred.csv", "id,prediction,p2\na,0,1\nb,0,1\n")
    assert score("imdb", refs, preds) == {"error": 50.0, "accuracy": 50.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,prediction\n0,1\n0,1\n", r"pred\.csv:3: duplicate id '0' \(first on line 2\)"),
        ("id,prediction\n0,1\n9,1\n", r"pred\.csv:3: id '9' is not in .*refs\.csv"),
        ("0,1\n", r"pred\.csv:1: header must name the columns id,prediction"),
        ("id,prediction\n", r"pred\.csv: no rows after the header"),
    ],
)
def test_bad_predictions_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    refs = write(tmp_path, "refs.csv", "id,label\n0,1\n1,0\n")
    with pytest.raises(HarnessError, match=message):
        score("trec-6", refs, write(tmp_path, "pred.csv", text))


def test_missing_predictions_warn(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.csv", "id,label\n0,1\n1,0\n")
    with pytest.warns(UserWarning, match=r"1 of 2 reference ids"):
        assert score("ag-news", refs, write(tmp_path, "pred.csv", "id,prediction\n0,1\n"))["accuracy"] == 50.0
