"""Golden tests of the Cityscapes scorer: a hand-computed 4x4 case, the official script as an oracle, bad input."""

from __future__ import annotations

import contextlib
import copy
import io
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from harness.errors import HarnessError
from tasks.cityscapes import CLASS_KEYS, CLASS_NAMES, KEYS
from tasks.cityscapes.fixtures import example, write_tiny_cityscapes
from tasks.cityscapes.score import ground_truth_files, label_table, score, train_ids_to_label_ids

# label ids (labels.py): 0 unlabeled, 7 road, 8 sidewalk, 9 parking (ignored, flat), 23 sky, 24 person, 26 car
GT = np.array(
    [
        [7, 7, 8, 8],
        [7, 7, 8, 0],
        [26, 26, 26, 23],
        [9, 9, 23, 23],
    ],
    dtype=np.uint8,
)
PRED = np.array(
    [
        [7, 8, 8, 8],
        [7, 7, 0, 0],
        [26, 26, 24, 23],
        [7, 7, 23, 26],
    ],
    dtype=np.uint8,
)


def write_pair(
    tmp_path: Path, gt: np.ndarray, pred: np.ndarray, pred_name: str = "x_000000_000019_pred.png"
) -> tuple[Path, Path]:
    refs, preds = tmp_path / "gtFine" / "val", tmp_path / "results"
    (refs / "x").mkdir(parents=True, exist_ok=True)
    preds.mkdir(exist_ok=True)
    Image.fromarray(gt).save(refs / "x" / "x_000000_000019_gtFine_labelIds.png")
    Image.fromarray(pred).save(preds / pred_name)
    return refs, preds


def test_hand_computed_4x4(tmp_path: Path) -> None:
    result = score(*write_pair(tmp_path, GT, PRED))
    assert list(result) == list(KEYS)
    # GT 0 (unlabeled) and 9 (parking) pixels are skipped: the parking pixels predicted as road are no FP of road.
    # road: TP 3, FN 1 (predicted sidewalk)                 -> 3/4
    # sidewalk: TP 2, FN 1 (predicted 0 = ignored id), FP 1 -> 2/4
    # car: TP 2, FN 1 (predicted person), FP 1 (sky pixel)  -> 2/4
    # sky: TP 2, FN 1 (predicted car)                       -> 2/3
    # person: FP 1, no ground truth                         -> 0
    expected = {"iou_road": 75.0, "iou_sidewalk": 50.0, "iou_car": 50.0, "iou_sky": 200 / 3, "iou_person": 0.0}
    assert {k: v for k, v in result.items() if k in CLASS_KEYS and not math.isnan(v)} == pytest.approx(expected)
    assert result["miou"] == pytest.approx(sum(expected.values()) / 5)
    # flat {road, sidewalk}: TP 6 (road->sidewalk is inside the category), FN 1 (sidewalk->unlabeled) -> 6/7
    # vehicle: TP 2, FN 1, FP 1 -> 1/2; sky: 2/3; human: FP 1 -> 0; construction, object, nature: undefined
    assert result["miou_category"] == pytest.approx(100 * (6 / 7 + 1 / 2 + 2 / 3 + 0) / 4)


def test_prediction_of_an_ignored_label_of_the_same_category_is_a_category_miss(tmp_path: Path) -> None:
    gt = np.full((2, 2), 7, dtype=np.uint8)  # road
    pred = np.array([[7, 7], [7, 9]], dtype=np.uint8)  # one pixel: parking, flat but not evaluated
    result = score(*write_pair(tmp_path, gt, pred))
    assert result["iou_road"] == pytest.approx(75.0) and result["miou_category"] == pytest.approx(75.0)


def test_agrees_with_the_official_script(tmp_path: Path) -> None:
    """cityscapesscripts' own evaluateImgLists (pure-Python path) on random predictions over every label id."""
    from cityscapesscripts.evaluation import evalPixelLevelSemanticLabeling as official

    write_tiny_cityscapes(tmp_path)
    ground_truth = ground_truth_files(tmp_path / "gtFine" / "val")
    rng = np.random.default_rng(0)
    (tmp_path / "pred").mkdir()
    predictions = []
    for gt_path in ground_truth:
        gt = np.array(Image.open(gt_path))
        pred = np.where(rng.random(gt.shape) < 0.3, rng.integers(0, 34, gt.shape), gt).astype(np.uint8)
        path = tmp_path / "pred" / gt_path.name.replace("gtFine_labelIds", "pred")
        Image.fromarray(pred).save(path)
        predictions.append(str(path))
    args = copy.copy(official.args)
    args.evalInstLevelScore, args.JSONOutput, args.quiet = False, False, True
    with contextlib.redirect_stdout(io.StringIO()):
        reference = official.evaluateImgLists(predictions, [str(p) for p in ground_truth], args)
    ours = score(tmp_path / "gtFine" / "val", tmp_path / "pred")
    assert ours["miou"] == pytest.approx(100 * reference["averageScoreClasses"])
    assert ours["miou_category"] == pytest.approx(100 * reference["averageScoreCategories"])
    for key, name in zip(CLASS_KEYS, CLASS_NAMES, strict=True):
        assert ours[key] == pytest.approx(100 * reference["classScores"][name])


def test_label_table_matches_cityscapesscripts() -> None:
    from cityscapesscripts.helpers.labels import name2label

    table = label_table()
    assert [name2label[name].trainId for name in CLASS_NAMES] == list(range(19))
    assert table.eval_ids == tuple(name2label[name].id for name in CLASS_NAMES)
    assert [name for name, _ in table.categories] == [
        "flat",
        "construction",
        "object",
        "nature",
        "sky",
        "human",
        "vehicle",
    ]
    assert dict(table.categories)["vehicle"] == (13, 14, 15, 16, 17, 18)
    assert table.train_id_of[[0, 7, 9, 33, 34]].tolist() == [255, 0, 255, 18, 255]
    assert train_ids_to_label_ids(np.array([0, 18, 255])).tolist() == [7, 33, 0]
    assert "iou_traffic_light" in KEYS and len(KEYS) == 21


def test_example_is_finite_and_matches_flat_and_city_folders(tmp_path: Path) -> None:
    files = example(tmp_path, "cityscapes-semantic")
    assert {p.parent.name for p in files["predictions"].rglob("*.png")} == {"results", "lindau"}
    result = score(files["references"], files["predictions"])
    assert all(math.isfinite(v) for v in result.values()) and 0 < result["miou"] < 100


def test_class_absent_everywhere_is_nan_and_left_out_of_the_mean(tmp_path: Path) -> None:
    result = score(*write_pair(tmp_path, GT, GT))
    assert result["iou_road"] == 100.0 and math.isnan(result["iou_bicycle"]) and result["miou"] == 100.0


# --- bad input -----------------------------------------------------------------------------------------------------


def test_missing_prediction_names_the_ground_truth(tmp_path: Path) -> None:
    refs, preds = write_pair(tmp_path, GT, PRED, pred_name="y_000000_000019_pred.png")
    with pytest.raises(
        HarnessError, match=r"for 1 of the 1 ground-truth images, starting with .*x_000000_000019_gtFine_labelIds\.png"
    ):
        score(refs, preds)


def test_two_matching_predictions_are_an_error(tmp_path: Path) -> None:
    refs, preds = write_pair(tmp_path, GT, PRED)
    (preds / "x").mkdir()
    Image.fromarray(PRED).save(preds / "x" / "x_000000_000019_leftImg8bit.png")
    with pytest.raises(HarnessError, match="a second prediction for"):
        score(refs, preds)


def test_size_mismatch_names_both_files(tmp_path: Path) -> None:
    refs, preds = write_pair(tmp_path, GT, PRED[:, :3])
    with pytest.raises(HarnessError, match=r"x_000000_000019_pred\.png: prediction is 3x4, its ground truth .* is 4x4"):
        score(refs, preds)


def test_train_ids_instead_of_label_ids_are_an_error(tmp_path: Path) -> None:
    refs, preds = write_pair(tmp_path, GT, np.where(PRED == 0, 255, PRED).astype(np.uint8))
    with pytest.raises(HarnessError, match=r"pred\.png: prediction pixel values 255 are not Cityscapes label ids"):
        score(refs, preds)


def test_unreadable_and_multichannel_pngs_are_errors(tmp_path: Path) -> None:
    refs, preds = write_pair(tmp_path, GT, PRED)
    (preds / "x_000000_000019_pred.png").write_bytes(b"\x89PNG broken")
    with pytest.raises(HarnessError, match=r"pred\.png: unreadable prediction image"):
        score(refs, preds)
    Image.fromarray(np.stack([PRED] * 3, axis=2)).save(preds / "x_000000_000019_pred.png")
    with pytest.raises(HarnessError, match="prediction image has 3 channels"):
        score(refs, preds)


def test_references_must_be_a_split_folder(tmp_path: Path) -> None:
    refs, preds = write_pair(tmp_path, GT, PRED)
    with pytest.raises(HarnessError, match=r"gtFine: no <city>/\*_gtFine_labelIds\.png files"):
        score(refs.parent, preds)
    with pytest.raises(HarnessError, match="expected a folder of prediction PNGs"):
        score(refs, preds / "x_000000_000019_pred.png")
