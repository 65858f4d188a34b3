"""SST-5 from the PTB trees: the root label, the leaves as text, scoring of written predictions and malformed trees
(tasks.sst)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.sst.data import parse_tree, read_trees
from tasks.sst.fixtures import write_tiny_sst
from tasks.sst.score import score_sst5
from tasks.text_data import AnswerAccuracy, TextTaskDataModule


def test_root_label_and_leaves_of_a_tree() -> None:
    label, leaves = parse_tree("(3 (2 It) (4 (2 's) (4 (2 a) (4 (4 good) (2 film)))))")
    assert label == "3" and leaves == ["It", "'s", "a", "good", "film"]
    assert parse_tree("(1 (2 -LRB-) (1 (2 2) (2 -RRB-)))") == ("1", ["-LRB-", "2", "-RRB-"])  # a word that is a digit


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ("(3 (2 It) (4 good)", "1 unclosed bracket"),
        ("(3 (2 It)) (4 good)", "text after the closing bracket"),
        ("(7 (2 It) (4 good))", "node without a label 0-4"),
        ("(3 (It) (4 good))", "node without a label 0-4"),
        ("It is good", r"expected a tree"),
    ],
)
def test_malformed_trees_name_file_and_line(tmp_path: Path, tree: str, message: str) -> None:
    (tmp_path / "test.txt").write_text("(2 (2 Fine) (2 .))\n" + tree + "\n")
    with pytest.raises(HarnessError, match=rf"test\.txt:2: not an SST tree: {message}"):
        read_trees(tmp_path / "test.txt")


def test_module_serves_sentences_with_root_labels_and_rescores(tmp_path: Path) -> None:
    root = write_tiny_sst(tmp_path / "data")
    module = TextTaskDataModule("sst-5", root / "trees", batch_size=5)
    module.setup()
    fields, labels = next(iter(module.test_dataloader()))
    assert fields["text"][1] == "The score -LRB- again -RRB- is dull" and labels.tolist() == [0, 1, 2, 3, 4]
    metric = AnswerAccuracy()
    metric.update(labels.flip(0), labels)  # 4 0 2 1 ... : only the middle one right
    written = metric.write_predictions(tmp_path, module.scoring(0, tmp_path))
    assert written["predictions"].read_text().splitlines()[:3] == ["id,prediction", "0,4", "1,3"]
    assert score_sst5(root, written["predictions"]) == {"accuracy": 20.0}
    assert score_sst5(root / "trees" / "test.txt", written["predictions"]) == {"accuracy": 20.0}


def test_a_label_outside_zero_to_four_is_an_error(tmp_path: Path) -> None:
    root = write_tiny_sst(tmp_path / "data")
    (tmp_path / "p.csv").write_text("id,prediction\n0,0\n1,5\n")
    with pytest.raises(HarnessError, match=r"p\.csv:3: field 'prediction': '5' is not one of 0, 1, 2, 3, 4"):
        score_sst5(root, tmp_path / "p.csv")
