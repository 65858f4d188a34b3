"""Golden tests of the COCO detection scorer (pycocotools underneath): hand-computed AP/AR on tiny sets.

AP in pycocotools is the mean, over the 101 recall thresholds 0, 0.01, ..., 1, of the interpolated precision
(the best precision at any recall >= the threshold; 0 beyond the last recall reached). So a category whose
detections reach recall r with precision p everywhere has AP = p * (floor(100 r) + 1) / 101.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.registry import load_object
from tasks.coco import COCO_DETECTION, KEYS
from tasks.coco.fixtures import example
from tasks.coco.score import coco_results, score

PERSON, CAR = 1, 3


def image(image_id: int) -> dict:
    return {"id": image_id, "file_name": f"{image_id:012d}.jpg", "width": 200, "height": 200}


def ann(ann_id: int, image_id: int, category: int, bbox: list[float], iscrowd: int = 0) -> dict:
    return {"id": ann_id, "image_id": image_id, "category_id": category, "bbox": bbox,
            "area": bbox[2] * bbox[3], "iscrowd": iscrowd, "segmentation": []}  # fmt: skip


def det(image_id: int, category: int, bbox: list[float], s: float) -> dict:
    return {"image_id": image_id, "category_id": category, "bbox": bbox, "score": s}


def write(tmp_path: Path, images: list[int], anns: list[dict], dets: object) -> tuple[Path, Path]:
    refs, preds = tmp_path / "instances_val2017.json", tmp_path / "results.json"
    categories = [{"id": PERSON, "name": "person"}, {"id": CAR, "name": "car"}]
    refs.write_text(json.dumps({"images": [image(i) for i in images], "annotations": anns, "categories": categories}))
    preds.write_text(json.dumps(dets))
    return refs, preds


# Objects of every area range: small 20x20 = 400 < 32², medium 50x50 = 2500, large 110x100 = 11000 > 96².
OBJECTS = [
    ann(1, 1, PERSON, [10, 10, 20, 20]),
    ann(2, 1, CAR, [50, 50, 110, 100]),
    ann(3, 2, PERSON, [0, 0, 50, 50]),
    ann(4, 3, CAR, [100, 100, 50, 50]),
]


def test_perfect_detections_score_100_everywhere(tmp_path: Path) -> None:
    dets = [det(a["image_id"], a["category_id"], a["bbox"], 0.9) for a in OBJECTS]
    result = score(*write(tmp_path, [1, 2, 3], OBJECTS, dets))
    assert list(result) == list(KEYS)
    assert result == pytest.approx(dict.fromkeys(KEYS, 100.0))


def test_half_the_objects_found(tmp_path: Path) -> None:
    # 4 persons in 4 images, 2 found exactly: recall 0.5 at precision 1 -> AP = 51/101 at every IoU threshold.
    anns = [ann(i, i, PERSON, [0, 0, 50, 50]) for i in range(1, 5)]
    dets = [det(1, PERSON, [0, 0, 50, 50], 0.9), det(2, PERSON, [0, 0, 50, 50], 0.8)]
    result = score(*write(tmp_path, [1, 2, 3, 4], anns, dets))
    ap = 100 * 51 / 101
    assert (
        result["AP"] == pytest.approx(ap) and result["AP50"] == pytest.approx(ap) and result["APm"] == pytest.approx(ap)
    )
    assert result["AR1"] == pytest.approx(50.0) and result["AR100"] == pytest.approx(50.0)
    assert math.isnan(result["APs"]) and math.isnan(result["ARl"])  # no small / large objects: pycocotools' -1


def test_loose_box_counts_only_below_its_iou(tmp_path: Path) -> None:
    # A 50x50 box shifted by 10 px: IoU = 40*50 / (2*2500 - 2000) = 2/3. A hit at thresholds 0.50..0.65 (4 of 10).
    anns = [ann(1, 1, PERSON, [0, 0, 50, 50])]
    result = score(*write(tmp_path, [1], anns, [det(1, PERSON, [10, 0, 50, 50], 0.9)]))
    assert result["AP50"] == pytest.approx(100.0) and result["AP75"] == pytest.approx(0.0)
    assert result["AP"] == pytest.approx(40.0) and result["AR100"] == pytest.approx(40.0)


def test_detections_in_a_crowd_region_are_ignored(tmp_path: Path) -> None:
    person = ann(1, 1, PERSON, [0, 0, 40, 40])
    region = [100, 100, 90, 90]
    dets = [det(1, PERSON, [110, 110, 30, 30], 0.95), det(1, PERSON, [0, 0, 40, 40], 0.9)]
    # iscrowd=1: the top detection lies inside the region (IoU with a crowd = intersection / detection area = 1):
    # matched to it and ignored, so the person is found at precision 1.
    crowd = score(*write(tmp_path, [1], [person, ann(2, 1, PERSON, region, iscrowd=1)], dets))
    assert crowd["AP"] == pytest.approx(100.0) and crowd["AR100"] == pytest.approx(100.0)
    # The same region as an ordinary object: the top detection is a false positive (IoU 900/8100) and the region a
    # miss: precision 1/2 up to recall 1/2 -> AP = 0.5 * 51/101.
    plain = score(*write(tmp_path, [1], [person, ann(2, 1, PERSON, region, iscrowd=0)], dets))
    assert plain["AP"] == pytest.approx(50 * 51 / 101) and plain["AR100"] == pytest.approx(50.0)


def test_only_the_100_best_detections_per_image_count(tmp_path: Path) -> None:
    anns = [ann(1, 1, PERSON, [0, 0, 20, 20])]
    false = [det(1, PERSON, [150.0, 150.0, 10.0, 10.0], 1.0 - i / 1000) for i in range(99)]
    hit = det(1, PERSON, [0, 0, 20, 20], 0.5)
    at_100 = score(*write(tmp_path, [1], anns, [*false, hit]))  # the hit is the 100th: found, precision 1/100
    assert at_100["AR100"] == pytest.approx(100.0) and at_100["AR10"] == pytest.approx(0.0)
    assert at_100["AP"] == pytest.approx(1.0)
    extra = det(1, PERSON, [150.0, 150.0, 10.0, 10.0], 0.9)
    at_101 = score(*write(tmp_path, [1], anns, [*false, extra, hit]))  # now 101st: cut off
    assert at_101["AP"] == pytest.approx(0.0) and at_101["AR100"] == pytest.approx(0.0)


def test_detections_of_other_categories_do_not_match(tmp_path: Path) -> None:
    anns = [ann(1, 1, PERSON, [0, 0, 50, 50])]
    result = score(*write(tmp_path, [1], anns, [det(1, CAR, [0, 0, 50, 50], 0.9)]))
    assert result["AP"] == pytest.approx(0.0)  # car has no ground truth: out of the mean; person: missed


def test_unknown_category_ids_are_ignored_with_a_warning(tmp_path: Path) -> None:
    dets = [det(1, PERSON, [0, 0, 50, 50], 0.5)]
    base = score(*write(tmp_path, [1], [ann(1, 1, PERSON, [0, 0, 50, 50])], dets))
    with pytest.warns(UserWarning, match="category id"):
        result = score(*write(tmp_path, [1], [ann(1, 1, PERSON, [0, 0, 50, 50])], [*dets, det(1, 99, [0, 0, 5, 5], 1)]))
    assert result == pytest.approx(base, nan_ok=True)


def test_empty_results_score_zero_where_there_is_ground_truth(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="no detections"):
        result = score(*write(tmp_path, [1, 2], [ann(1, 1, PERSON, [0, 0, 50, 50])], []))
    assert {k: v for k, v in result.items() if not math.isnan(v)} == {
        "AP": 0.0, "AP50": 0.0, "AP75": 0.0, "APm": 0.0, "AR1": 0.0, "AR10": 0.0, "AR100": 0.0, "ARm": 0.0
    }  # fmt: skip


def test_example_values(tmp_path: Path) -> None:
    files = load_object(COCO_DETECTION.example)(tmp_path, "coco-detection")
    result = score(files["references"], files["predictions"])
    # Small objects: car 139 found, car 632 missed (car AP 51/101, recall 1/2); dog 632 found before the small false
    # positive (AP 1, recall 1); the shifted dog matches the medium dog, so it is ignored in the small range.
    assert result["APs"] == pytest.approx(100 * (51 / 101 + 1) / 2) and result["ARs"] == pytest.approx(75.0)
    assert result["APl"] == pytest.approx(100.0) and result["ARl"] == pytest.approx(100.0)
    assert all(math.isfinite(v) for v in result.values())


def test_coco_results_converts_corner_boxes() -> None:
    rows = coco_results(7, [[10, 20, 40, 60]], [0.5], [3])
    assert rows == [{"image_id": 7, "category_id": 3, "bbox": [10.0, 20.0, 30.0, 40.0], "score": 0.5}]


# --- bad input -----------------------------------------------------------------------------------------------------

GOOD = [ann(1, 1, PERSON, [0, 0, 50, 50])]


@pytest.mark.parametrize(
    ("dets", "message"),
    [
        ({"image_id": 1}, "JSON array of detections"),
        ([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 5]}], r"\[0\]: missing field\(s\) score"),
        ([det(1, PERSON, [0, 0, 5], 0.5)], r"\[0\]\.bbox: expected a box"),
        ([det(1, PERSON, [0, 0, "5", 5], 0.5)], r"\[0\]\.bbox: expected a finite number"),
        ([det(1, PERSON, [0, 0, -5, 5], 0.5)], "negative width or height"),
        ([det(1, PERSON, [0, 0, 5, 5], 0.5), det(1, PERSON, [0, 0, 5, 5], float("nan"))], r"\[1\]\.score"),
        (
            [det(1, PERSON, [0, 0, 5, 5], 0.5), det(42, PERSON, [0, 0, 5, 5], 0.5)],
            r"\[1\]\.image_id: 42 is not an image of .*instances_val2017.json",
        ),
        ([det("1", PERSON, [0, 0, 5, 5], 0.5)], r"\[0\]\.image_id: expected an integer id"),
        (["box"], r"\[0\]: expected a JSON object"),
    ],
)
def test_bad_results_name_the_file_and_entry(tmp_path: Path, dets: object, message: str) -> None:
    refs, preds = write(tmp_path, [1], GOOD, dets)
    with pytest.raises(HarnessError, match=message) as info:
        score(refs, preds)
    assert str(preds) in str(info.value)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    refs, preds = write(tmp_path, [1], GOOD, [])
    preds.write_text('[\n{"image_id": 1,\n')
    with pytest.raises(HarnessError, match=rf"{preds}:3: invalid JSON"):
        score(refs, preds)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("annotations"), "missing the 'annotations' list"),
        (lambda d: d["annotations"][0].update(id=0), r"annotations\[0\]\.id: annotation ids must be positive"),
        (
            lambda d: d["annotations"].append(dict(d["annotations"][0])),
            r"annotations\[1\]\.id: annotation id 1 appears twice",
        ),
        (lambda d: d["annotations"][0].update(image_id=5), r"annotations\[0\]\.image_id: 5 is not in 'images'"),
        (lambda d: d["annotations"][0].pop("iscrowd"), r"annotations\[0\]: missing field\(s\) iscrowd"),
        (lambda d: d["images"].append(image(1)), r"images\[1\]\.id: images id 1 appears twice"),
        (lambda d: d.update(annotations=[]), "no annotations to score against"),
    ],
)
def test_bad_references_name_the_file_and_field(tmp_path: Path, mutate, message: str) -> None:
    refs, preds = write(tmp_path, [1], GOOD, [det(1, PERSON, [0, 0, 5, 5], 0.5)])
    doc = json.loads(refs.read_text())
    mutate(doc)
    refs.write_text(json.dumps(doc))
    with pytest.raises(HarnessError, match=message) as info:
        score(refs, preds)
    assert str(refs) in str(info.value)


def test_pycocotools_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = example(tmp_path, "coco-detection")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score(files["references"], files["predictions"])
    assert capsys.readouterr().out == ""
