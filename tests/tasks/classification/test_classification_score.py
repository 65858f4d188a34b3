"""Golden values and reference folders for the small-image scorers (tasks.classification.score)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tasks.classification as classification
from harness.errors import HarnessError
from harness.registry import load_object
from tasks.classification.data import load_split
from tasks.classification.fixtures import example, write_tiny_classification
from tasks.classification.score import score

TASKS = [classification.CIFAR_10, classification.CIFAR_100, classification.SVHN, classification.IMAGENET_32]


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.id)
def test_example_scores_to_the_task_keys(task, tmp_path: Path) -> None:
    files = load_object(task.example)(tmp_path, task.id)
    result = task.scorer()(files["references"], files["predictions"])
    assert result == {"top1": 50.0, "top5": 75.0, "error": 50.0}
    assert tuple(result) == task.keys and all(math.isfinite(v) for v in result.values())


@pytest.mark.parametrize("dataset", sorted(classification.LAYOUTS))
def test_dataset_folder_as_references(dataset: str, tmp_path: Path) -> None:
    root = write_tiny_classification(tmp_path / "data", dataset, classes=5)
    labels = load_split(dataset, root, "test").labels.tolist()
    rows = [f"{i},{(y + 1) % 5 if i < 3 else y}" for i, y in enumerate(labels)]  # the first three wrong
    predictions = tmp_path / "pred.csv"
    predictions.write_text("id,prediction\n" + "\n".join(rows) + "\n")
    result = score(dataset, root, predictions)
    assert result["top1"] == pytest.approx(100 * (len(labels) - 3) / len(labels))


def test_svhn_folder_references_use_digits(tmp_path: Path) -> None:
    root = write_tiny_classification(tmp_path / "svhn", "svhn", classes=10, test_per_class=1)
    import scipy.io

    stored = scipy.io.loadmat(root / "test_32x32.mat")["y"].ravel().tolist()
    predictions = tmp_path / "pred.csv"
    predictions.write_text("id,prediction\n" + "".join(f"{i},{y % 10}\n" for i, y in enumerate(stored)))
    assert 10 in stored and score("svhn", root, predictions)["top1"] == 100.0


def test_unknown_id_names_the_line_and_the_folder(tmp_path: Path) -> None:
    root = write_tiny_classification(tmp_path / "data", "cifar-10", classes=2, test_per_class=1)
    predictions = tmp_path / "pred.csv"
    predictions.write_text("id,prediction\n0,1\n1,0\n2,0\n")
    with pytest.raises(HarnessError, match=r"pred\.csv:4: id '2' is not in .*data"):
        score("cifar-10", root, predictions)


def test_missing_predictions_warn_and_count_as_wrong(tmp_path: Path) -> None:
    files = example(tmp_path, "cifar-10")
    files["predictions"].write_text("id,prediction\n0,3\n")
    with pytest.warns(UserWarning, match=r"3 of 4 reference ids .* counted as wrong"):
        assert score("cifar-10", **files)["top1"] == 25.0


def test_unknown_dataset(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"unknown small-image task 'mnist'"):
        score("mnist", tmp_path, tmp_path)
