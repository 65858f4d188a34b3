"""The fast COCO path (faster-coco-eval) against the reference (pycocotools): the same 12 numbers on the fixtures.

The cases are the fixtures of tests/tasks/coco/test_coco_score.py and tasks.coco.fixtures: the tiny val split with
its example detections (every area range, a crowd region, a miss, a false positive), the tiny train split with
jittered detections, a crowd-region hit, the 100-detections cap and empty results. Agreement is to 1e-9 of a
percentage point: the two libraries add the same terms in another order (pycocotools' perfect APl is
99.99999999999997, faster-coco-eval's 100.0); NaN (no ground truth in a range) must be NaN in both.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from harness.errors import HarnessError
from tasks.coco import KEYS
from tasks.coco.fixtures import example_detections, tiny_instances
from tasks.coco.metric import CocoDetectionMetric
from tasks.coco.score import BACKEND_ENV, check_detections, check_references, evaluate

PLACE = "fixture"


def _jittered(references: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Every object found with a box moved by up to 6 px and a random score, plus one stray box per image."""
    rng = random.Random(seed)
    dets = []
    for ann in references["annotations"]:
        x, y, w, h = ann["bbox"]
        box = [x + rng.uniform(-6, 6), y + rng.uniform(-6, 6), w * rng.uniform(0.8, 1.2), h * rng.uniform(0.8, 1.2)]
        dets.append(
            {"image_id": ann["image_id"], "category_id": ann["category_id"], "bbox": box, "score": rng.random()}
        )
    for image in references["images"]:
        dets.append({"image_id": image["id"], "category_id": 1, "bbox": [5.0, 5.0, 30.0, 30.0], "score": rng.random()})
    return dets


def _crowd_and_cap(references: dict[str, Any]) -> list[dict[str, Any]]:
    """A hit inside the crowd region of image 285 and 101 detections on image 632 (the 100-per-image cap)."""
    dets = [{"image_id": 285, "category_id": 1, "bbox": [5.0, 85.0, 30.0, 30.0], "score": 0.99}]
    dets += [
        {"image_id": 632, "category_id": 3, "bbox": [120.0, 80.0, 10.0, 10.0], "score": 1 - i / 1000}
        for i in range(100)
    ]
    dets.append({"image_id": 632, "category_id": 3, "bbox": [10.0, 10.0, 60.0, 40.0], "score": 0.01})
    return dets


CASES = {
    "val-example": ("val", lambda refs: example_detections()),
    "train-jittered": ("train", lambda refs: _jittered(refs, 0)),
    "val-jittered": ("val", lambda refs: _jittered(refs, 1)),
    "val-crowd-and-cap": ("val", _crowd_and_cap),
    "val-empty": ("val", lambda refs: []),
}


def _checked(split: str, make) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    references = check_references(tiny_instances(split), PLACE)
    return references, check_detections(make(references), PLACE, references, PLACE)


@pytest.mark.parametrize("case", list(CASES))
def test_both_backends_give_the_same_12_numbers(case: str) -> None:
    references, detections = _checked(*CASES[case])
    reference = evaluate(references, detections, "pycocotools")
    fast = evaluate(references, detections, "faster-coco-eval")
    assert list(reference) == list(fast) == list(KEYS)
    for key in KEYS:
        assert math.isnan(reference[key]) == math.isnan(fast[key]), key
        assert fast[key] == pytest.approx(reference[key], rel=0, abs=1e-9, nan_ok=True), key
    assert reference.backend.startswith("pycocotools ") and fast.backend.startswith("faster-coco-eval ")


def test_the_reference_is_the_default_and_the_environment_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    references, detections = _checked(*CASES["val-example"])
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert evaluate(references, detections).backend.startswith("pycocotools ")
    monkeypatch.setenv(BACKEND_ENV, "faster-coco-eval")
    assert evaluate(references, detections).backend.startswith("faster-coco-eval ")
    monkeypatch.setenv(BACKEND_ENV, "detectron2")
    with pytest.raises(HarnessError, match=rf"'detectron2' \(\${BACKEND_ENV}\): choose one of pycocotools"):
        evaluate(references, detections)


def test_the_metric_says_which_backend_scored() -> None:
    import torch

    metric = CocoDetectionMetric(backend="faster-coco-eval")
    boxes = torch.tensor([[10.0, 10.0, 50.0, 60.0]])
    metric.update([{"boxes": boxes, "scores": torch.tensor([0.9]), "labels": torch.tensor([1])}],
                  [{"boxes": boxes, "labels": torch.tensor([1])}])  # fmt: skip
    assert float(metric.compute()["AP"]) == pytest.approx(100.0)
    assert metric.scored_by.startswith("faster-coco-eval ")
