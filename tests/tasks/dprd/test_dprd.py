"""DPRD (tasks.dprd) from its distributed files: four lines and a blank line per example, the answer as the index of
the right candidate, the pronoun's first whole-word occurrence, malformed files named, written predictions rescored."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.dprd.data import pronoun_span, read_dprd
from tasks.dprd.fixtures import write_tiny_dprd
from tasks.dprd.score import score_dprd
from tasks.text_data import AnswerAccuracy, TextTaskDataModule


@pytest.fixture(scope="module")
def dprd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_dprd(tmp_path_factory.mktemp("dprd") / "root")


def test_examples_carry_sentence_pronoun_candidates_and_answer_index(dprd: Path) -> None:
    records = read_dprd(dprd / "train.c.txt")
    assert [r.id for r in records] == ["0", "1", "2", "3"]
    assert records[1].fields == (
        "The trophy does not fit into the suitcase because it is too small.", "it", ("trophy", "suitcase"),
    )  # fmt: skip
    assert [r.label for r in records] == [0, 1, 0, 1]
    assert read_dprd(dprd / "test.c.txt")[0].fields[2] == ("The man", "his son")  # spaces after the comma dropped


def test_pronoun_is_the_first_whole_word_occurrence() -> None:
    sentence = "It did not fit because it was big."
    assert pronoun_span(sentence, "it") == (0, 2)  # case-insensitive, and "fit" holds no whole-word "it"
    assert pronoun_span("The fit was wrong.", "it") is None
    assert pronoun_span("Tom hit him, so he cried.", "he") == (16, 18)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A sentence with it.\nit\nA,B\n\n", ":1: an example of 3 lines"),
        ("A sentence with it.\nit\nA B\nA\n\n", ":3: expected two candidates"),
        ("A sentence with it.\nit\nA,B\nC\n\n", ":4: the answer 'C' is neither candidate"),
        ("A sentence.\nit\nA,B\nA\n\n", ":2: the pronoun 'it' is not a word"),
        ("\n\n", "no examples"),
    ],
)
def test_malformed_files_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "test.c.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HarnessError, match=message):
        read_dprd(path)


def test_module_predictions_rescore_to_the_metric(dprd: Path, tmp_path: Path) -> None:
    module = TextTaskDataModule("dprd", dprd, batch_size=8)
    module.setup()
    fields, labels = next(iter(module.test_dataloader()))
    assert set(fields) == {"sentence", "pronoun", "candidates"} and labels.tolist() == [0, 1, 1, 0]
    metric = AnswerAccuracy()
    metric.update(torch.tensor([0, 1, 1, 1]), labels)  # the last one wrong
    written = metric.write_predictions(tmp_path, module.scoring(0, tmp_path))
    assert (
        score_dprd(dprd, written["predictions"])
        == {"accuracy": 75.0}
        == {"accuracy": float(metric.compute()["accuracy"])}
    )
