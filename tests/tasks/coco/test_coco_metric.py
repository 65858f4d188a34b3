"""The COCO torchmetrics metric agrees with the official-format scorer (both end in pycocotools)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tasks.coco import KEYS
from tasks.coco.data import CocoDetectionDataModule
from tasks.coco.fixtures import example, example_detections
from tasks.coco.metric import CocoDetectionMetric
from tasks.coco.score import score


def preds_for(image_ids: list[int]) -> list[dict[str, torch.Tensor]]:
    """The example detections of each image as torchvision-style prediction dicts (xyxy boxes)."""
    out = []
    for image_id in image_ids:
        dets = [d for d in example_detections() if d["image_id"] == image_id]
        boxes = [[x, y, x + w, y + h] for x, y, w, h in (d["bbox"] for d in dets)]
        out.append(
            {
                "boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
                "scores": torch.tensor([d["score"] for d in dets]),
                "labels": torch.tensor([d["category_id"] for d in dets], dtype=torch.int64),
            }
        )
    return out


def test_metric_on_data_module_targets_equals_the_scorer(tmp_path: Path) -> None:
    files = example(tmp_path, "coco-detection")
    expected = score(files["references"], files["predictions"])
    dm = CocoDetectionDataModule(tmp_path, batch_size=2)
    dm.setup("test")
    metric = CocoDetectionMetric()
    for _, targets in dm.test_dataloader():  # two batches: 2 images, then 1
        metric.update(preds_for([int(t["image_id"]) for t in targets]), targets)
    result = {key: float(value) for key, value in metric.compute().items()}
    assert list(result) == list(KEYS)
    assert result == pytest.approx(expected, abs=1e-9)
    metric.reset()
    with pytest.warns(UserWarning, match="called before the ``update``"):
        assert all(math.isnan(float(v)) for v in metric.compute().values())


def test_metric_defaults_crowd_to_0_and_area_to_the_box() -> None:
    metric = CocoDetectionMetric()
    target = [{"boxes": torch.tensor([[0.0, 0.0, 50.0, 50.0]]), "labels": torch.tensor([1])}]
    pred = [
        {"boxes": torch.tensor([[10.0, 0.0, 60.0, 50.0]]), "scores": torch.tensor([0.9]), "labels": torch.tensor([1])}
    ]
    metric.update(pred, target)
    result = metric.compute()
    assert float(result["AP50"]) == pytest.approx(100.0) and float(result["AP"]) == pytest.approx(40.0)  # IoU 2/3
    assert float(result["APm"]) == pytest.approx(40.0) and math.isnan(float(result["APs"]))  # area 2500: medium


def test_metric_rejects_mismatched_batches() -> None:
    with pytest.raises(ValueError, match="1 predictions for 2 images"):
        CocoDetectionMetric().update([{}], [{}, {}])


def _compute_on(rank: int, world: int, init_file: str, images: list, out: Path) -> None:
    """One process of a gloo group: update with images ``rank, rank + world, ...``, compute (gathered), write."""
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    metric = CocoDetectionMetric()
    for preds, targets in images[rank::world]:
        metric.update(preds, targets)
    values = {key: float(value) for key, value in metric.compute().items()}
    (out / f"{rank}.json").write_text(json.dumps(values))
    torch.distributed.destroy_process_group()


def test_two_processes_with_unequal_image_counts_gather_every_image(tmp_path: Path) -> None:
    """The states are gathered as one tensor each: 2 images on rank 0 and 1 on rank 1 (an un-padded split of 3)
    give the single-process numbers (harness.distributed)."""
    example(tmp_path, "coco-detection")
    dm = CocoDetectionDataModule(tmp_path, batch_size=1)
    dm.setup("test")
    ids = [
        image["id"] for image in json.loads((tmp_path / "annotations" / "instances_val2017.json").read_text())["images"]
    ]
    images = [
        (preds_for([image_id]), targets) for image_id, (_, targets) in zip(ids, dm.test_dataloader(), strict=True)
    ]
    single = CocoDetectionMetric()
    for preds, targets in images:
        single.update(preds, targets)
    expected = {key: float(value) for key, value in single.compute().items()}
    torch.multiprocessing.start_processes(
        _compute_on, args=(2, str(tmp_path / "rendezvous"), images, tmp_path), nprocs=2, start_method="fork"
    )
    for rank in (0, 1):
        assert json.loads((tmp_path / f"{rank}.json").read_text()) == pytest.approx(expected, abs=1e-9, nan_ok=True)
