"""Strict id -> answer prediction files (tasks.text_files): every malformed, truncated or mismatched file is one
clear error line naming the file, the line and the field; nothing is scored as 0 silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.text_files import files_hash, score_answers

GOLD = {"a": "entails", "b": "neutral", "c": "entails", "d": "neutral"}
COLUMNS = ("id", "prediction")
ANSWERS = ("entails", "neutral")


def score(tmp_path: Path, text: str) -> dict[str, float]:
    predictions = tmp_path / "p.csv"
    predictions.write_text(text, encoding="utf-8")
    return score_answers(tmp_path / "refs.tsv", GOLD, predictions, COLUMNS, ANSWERS)


def test_accuracy_is_the_share_of_right_answers(tmp_path: Path) -> None:
    assert score(tmp_path, "id,prediction\na,entails\nb,entails\nc,entails\nd,neutral\n") == {"accuracy": 75.0}
    assert score(tmp_path, "\ufeffid,prediction\r\nd,neutral\r\nc,neutral\r\nb,neutral\r\na,neutral\r\n") == {
        "accuracy": 50.0
    }  # any row order, a byte-order mark and CRLF line ends


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"p\.csv:1: expected the header 'id,prediction', found an empty file"),
        ("a,entails\n", r"p\.csv:1: expected the header 'id,prediction', found 'a,entails'"),
        ("id,label\na,entails\n", r"p\.csv:1: expected the header 'id,prediction', found 'id,label'"),
        ("id,prediction\n", r"p\.csv: no rows after the header"),
        ("id,prediction\na,entails,x\n", r"p\.csv:2: 3 fields, expected 2"),
        ("id,prediction\na\n", r"p\.csv:2: 1 fields, expected 2"),
        ("id,prediction\n,entails\n", r"p\.csv:2: field 'id': empty id"),
        ("id,prediction\na,entails\na,neutral\n", r"p\.csv:3: field 'id': duplicate id 'a' \(first on line 2\)"),
        (
            "id,prediction\na,contradiction\n",
            r"p\.csv:2: field 'prediction': 'contradiction' is not one of entails, neutral",
        ),
        ("id,prediction\na,\n", r"p\.csv:2: field 'prediction': '' is not one of"),
        (
            "id,prediction\na,entails\nz,neutral\n",
            r"p\.csv:3: id 'z' is not an example of .*refs\.tsv \(1 unknown ids: z\)",
        ),
        (
            "id,prediction\na,entails\nb,neutral\n",
            r"p\.csv: no prediction for 2 of the 4 examples of .*refs\.tsv \(ids c, d\)",
        ),
        ('id,prediction\na,"entails\n', r"p\.csv: not readable as UTF-8 CSV"),
    ],
)
def test_malformed_prediction_files_give_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(HarnessError, match=message) as caught:
        score(tmp_path, text)
    assert "\n" not in str(caught.value)


def test_not_utf8_and_missing_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_bytes(b"id,prediction\na,entails\xff\n")
    with pytest.raises(HarnessError, match=r"p\.csv: not readable as UTF-8 CSV"):
        score_answers(tmp_path / "refs", GOLD, tmp_path / "p.csv", COLUMNS, ANSWERS)
    with pytest.raises(HarnessError, match=r"absent\.csv: cannot open"):
        score_answers(tmp_path / "refs", GOLD, tmp_path / "absent.csv", COLUMNS, ANSWERS)


def test_files_hash_names_files_relative_to_their_folder(tmp_path: Path) -> None:
    for folder in ("x", "y"):
        (tmp_path / folder / "sub").mkdir(parents=True)
        (tmp_path / folder / "sub" / "a.txt").write_text("same bytes")
    assert files_hash(tmp_path / "x", ["sub/a.txt"]) == files_hash(tmp_path / "y", ["sub/a.txt"])
    assert files_hash(tmp_path / "x", ["sub/a.txt"]) != files_hash(tmp_path, ["x/sub/a.txt"])
    with pytest.raises(HarnessError, match=r"b\.txt: cannot read"):
        files_hash(tmp_path / "x", ["sub/b.txt"])
