"""Golden values and bad inputs for the ImageNet scorer (tasks.imagenet.score)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.imagenet import IMAGENET_1K
from tasks.imagenet.score import score

REFERENCES = """id,label
img1,n01
img2,n02
img3,n03
img4,n04
img5,n05
img6,n06
img7,n07
img8,n08
"""

# img1-3: right at top-1; img4: right at guess 2; img5: right at guess 5; img6: wrong in all five;
# img7: right only at guess 3; img8: wrong, with trailing guesses left empty.
PREDICTIONS_TOP5 = """id,prediction,p2,p3,p4,p5
img1,n01,n02,n03,n04,n05
img2,n02,n01,n03,n04,n05
img3,n03,n01,n02,n04,n05
img4,n01,n04,n02,n03,n05
img5,n01,n02,n03,n04,n05
img6,n01,n02,n03,n04,n05
img7,n01,n02,n07,n04,n05
img8,n01,,,,
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def refs(tmp_path: Path) -> Path:
    return write(tmp_path, "refs.csv", REFERENCES)


def test_golden_top1_top5(tmp_path: Path, refs: Path) -> None:
    result = score(refs, write(tmp_path, "pred.csv", PREDICTIONS_TOP5))
    # top-1: img1, img2, img3 = 3/8; top-5: img1, img2, img3, img4, img5, img7 = 6/8.
    assert result == {"top1": 37.5, "top5": 75.0, "error": 62.5}
    assert tuple(result) == IMAGENET_1K.keys


def test_single_column_top5_equals_top1(tmp_path: Path, refs: Path) -> None:
    rows = "".join(f"img{i},n0{i if i % 2 else 9}\n" for i in range(1, 9))  # odd ids right: 4/8
    result = score(refs, write(tmp_path, "pred.csv", "id,prediction\n" + rows))
    assert result == {"top1": 50.0, "top5": 50.0, "error": 50.0}


def test_integer_labels_compared_as_strings_with_whitespace_and_bom(tmp_path: Path) -> None:
    references = write(tmp_path, "refs.csv", "\ufeffid,label\na,0\nb,10\nc,999\n")
    predictions = write(tmp_path, "pred.csv", "id, prediction ,p2\n a , 0 ,1\nb,1,10\n\nc,99,998\n")
    result = score(references, predictions)
    assert result["top1"] == pytest.approx(100 / 3)
    assert result["top5"] == pytest.approx(200 / 3)
    assert result["error"] == pytest.approx(200 / 3)


def test_columns_in_any_order_and_extra_reference_columns(tmp_path: Path) -> None:
    references = write(tmp_path, "refs.csv", "label,words,id\nn01,tench,a\nn02,goldfish,b\n")
    predictions = write(tmp_path, "pred.csv", "prediction,id\nn01,a\nn01,b\n")
    assert score(references, predictions) == {"top1": 50.0, "top5": 50.0, "error": 50.0}


def test_missing_predictions_count_as_wrong_and_warn(tmp_path: Path, refs: Path) -> None:
    predictions = write(tmp_path, "pred.csv", "id,prediction\nimg1,n01\nimg2,n02\n")
    with pytest.warns(UserWarning, match=r"6 of 8 reference ids .* no prediction"):
        result = score(refs, predictions)
    assert result == {"top1": 25.0, "top5": 25.0, "error": 75.0}


def test_complete_predictions_do_not_warn(tmp_path: Path, refs: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score(refs, write(tmp_path, "pred.csv", PREDICTIONS_TOP5))


@pytest.mark.parametrize(
    ("which", "text", "message"),
    [
        ("refs", "", r"refs\.csv: empty file"),
        ("refs", "\n\n", r"refs\.csv: empty file"),
        ("refs", "id,label\n", r"refs\.csv: no rows after the header"),
        ("refs", "img1,n01\nimg2,n02\n", r"refs\.csv:1: header must name the columns id,label"),
        ("refs", "id,class\nimg1,n01\n", r"refs\.csv:1: .*missing label"),
        ("refs", "id,label\nimg1,n01\nimg2,n02\nimg1,n03\n", r"refs\.csv:4: duplicate id 'img1' \(first on line 2\)"),
        ("refs", "id,label\nimg1,n01,extra\n", r"refs\.csv:2: 3 fields, but the header names 2"),
        ("refs", "id,label\nimg1,\n", r"refs\.csv:2: empty label"),
        ("refs", "id,label\n,n01\n", r"refs\.csv:2: empty id"),
        ("refs", "id,id,label\na,a,n01\n", r"refs\.csv:1: column 'id' appears more than once"),
        ("pred", "", r"pred\.csv: empty file"),
        ("pred", "id,prediction\n", r"pred\.csv: no rows after the header"),
        ("pred", "img1,n01\n", r"pred\.csv:1: header must name the columns id,prediction"),
        ("pred", "id,prediction\nimg1,n01\nimg1,n02\n", r"pred\.csv:3: duplicate id 'img1' \(first on line 2\)"),
        ("pred", "id,prediction\nimg1,n01\nimg9,n01\n", r"pred\.csv:3: id 'img9' is not in .*refs\.csv"),
        ("pred", "id,prediction,p2,p3,p4,p5,p6\nimg1,a,b,c,d,e,f\n", r"pred\.csv:1: column 'p6': more than 5 guesses"),
        ("pred", "id,prediction,p3\nimg1,a,b\n", r"pred\.csv:1: guess columns must run prediction,p2"),
        ("pred", "id,prediction,score\nimg1,a,0.9\n", r"pred\.csv:1: unknown column 'score'"),
        ("pred", "id,prediction\nimg1,\n", r"pred\.csv:2: empty prediction"),
        ("pred", "id,prediction\nimg1\n", r"pred\.csv:2: 1 fields, but the header names 2"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, refs: Path, which: str, text: str, message: str) -> None:
    references = write(tmp_path, "refs.csv", text) if which == "refs" else refs
    predictions = write(tmp_path, "pred.csv", text if which == "pred" else PREDICTIONS_TOP5)
    with pytest.raises(HarnessError, match=message):
        score(references, predictions)


def test_missing_file_is_named(tmp_path: Path, refs: Path) -> None:
    with pytest.raises(HarnessError, match=r"nope\.csv: cannot open"):
        score(refs, tmp_path / "nope.csv")


def test_binary_garbage_is_named(tmp_path: Path, refs: Path) -> None:
    predictions = tmp_path / "pred.csv"
    predictions.write_bytes(b"id,prediction\n\xff\xfe\x00garbage\n")
    with pytest.raises(HarnessError, match=r"pred\.csv:\d+: not readable as UTF-8 CSV"):
        score(refs, predictions)
