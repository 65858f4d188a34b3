"""Each data module's ``scoring`` (harness.predictions) names the examples in its test loader's order.

An oracle that predicts every label its test loader serves, fed to the task's metric batch by batch as a system
would, must write predictions that the task's scorer, given the data module's references, scores as perfect. Ids
out of step with the loader would pair labels with the wrong examples (every fixture mixes its classes).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from harness import registry


def _imagenet(root: Path) -> Any:
    from tasks.imagenet.data import ImageNetDataModule
    from tasks.imagenet.fixtures import write_tiny_ilsvrc

    write_tiny_ilsvrc(root, classes=4, val_per_class=3)
    return ImageNetDataModule(root, batch_size=5, image_size=16, crop_fraction=1.0, verify_images=0)


def _cifar(root: Path) -> Any:
    from tasks.classification.data import ClassificationDataModule
    from tasks.classification.fixtures import write_tiny_classification

    return ClassificationDataModule("cifar-10", write_tiny_classification(root, "cifar-10"), batch_size=7)


def _pets(root: Path) -> Any:
    from tasks.transfer.data import TransferDataModule
    from tasks.transfer.fixtures import write_tiny_pets

    write_tiny_pets(root, classes=3, test_per_class=2)
    return TransferDataModule("oxford-pets", root, batch_size=4, image_size=16, crop_fraction=1.0, verify_images=0)


def _ag_news(root: Path) -> Any:
    from tasks.text_classification.data import TextClassificationDataModule
    from tasks.text_classification.fixtures import write_tiny_text_classification

    return TextClassificationDataModule("ag-news", write_tiny_text_classification(root, "ag-news"), batch_size=3)


def _digits(root: Path) -> Any:
    from tasks.fashion_mnist.data import ArrayDataModule

    return ArrayDataModule(dataset="digits", train_size=100, test_size=60, eval_batch_size=25)  # a subset of 297


CLASSIFIERS: dict[str, Callable[[Path], Any]] = {
    "imagenet": _imagenet, "cifar": _cifar, "pets": _pets, "ag-news": _ag_news, "digits-subset": _digits,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_an_oracle_on_the_test_loader_scores_perfect_against_the_modules_references(name: str, tmp_path: Path) -> None:
    from tasks.imagenet.metric import accuracy_metrics

    data = CLASSIFIERS[name](tmp_path / "data")
    data.setup("test")
    classes = getattr(data, "num_classes", 10)  # ArrayDataModule has no num_classes: digits has 10
    metric = accuracy_metrics(classes)
    for _, labels in data.test_dataloader():
        metric.update(torch.nn.functional.one_hot(labels, classes).float(), labels)
    (tmp_path / "out").mkdir()
    scoring = data.scoring(0, tmp_path / "out")
    written = metric.write_predictions(tmp_path / "out", scoring)
    assert len(scoring.ids) == len(metric.kept_guesses())
    scored = registry.task(scoring.task).scorer()(scoring.references, written["predictions"])
    assert scored.get("top1", scored.get("accuracy")) == 100.0


def test_librispeech_hypotheses_in_loader_order_score_a_wer_of_zero(tmp_path: Path) -> None:
    from tasks.librispeech.data import LibriSpeechDataModule
    from tasks.librispeech.fixtures import write_tiny_librispeech
    from tasks.librispeech.metric import LibriSpeechWER

    data = LibriSpeechDataModule(write_tiny_librispeech(tmp_path / "data"), train_splits="dev-clean",
                                 val_splits="dev-clean", test_splits="dev-clean", batch_size=2)  # fmt: skip
    data.setup("test")
    metric = LibriSpeechWER()
    for batch in data.test_dataloader()[0]:
        metric.update(batch.transcripts, batch.transcripts)  # no ids: the data module's order is used
    (tmp_path / "out").mkdir()
    scoring = data.scoring(0, tmp_path / "out")
    written = metric.write_predictions(tmp_path / "out", scoring)
    scored = registry.task(scoring.task).scorer()(scoring.references, written["predictions"])
    assert (scored["wer"], scored["utterances"]) == (0.0, len(scoring.ids))


def test_both_mnli_loaders_score_perfect_with_their_own_dev_files(tmp_path: Path) -> None:
    """``glue-mnli`` tests on two loaders: each names its own scorer task, dev file and ids."""
    from tasks.glue.data import GlueDataModule
    from tasks.glue.fixtures import write_tiny_glue_data
    from tasks.glue.metric import glue_metrics

    data = GlueDataModule(write_tiny_glue_data(tmp_path / "data", "glue-mnli"), task="glue-mnli", batch_size=3)
    data.setup("test")
    tasks = []
    for index, loader in enumerate(data.test_dataloader()):
        scoring = data.scoring(index, tmp_path)
        metric = glue_metrics(scoring.task)
        for batch in loader:
            metric.update(batch["labels"], batch["labels"])
        written = metric.write_predictions(tmp_path / f"out{index}", scoring)
        assert registry.task(scoring.task).scorer()(scoring.references, written["predictions"]) == {"accuracy": 100.0}
        tasks.append(scoring.task)
    assert tasks == ["glue-mnli-m", "glue-mnli-mm"]
