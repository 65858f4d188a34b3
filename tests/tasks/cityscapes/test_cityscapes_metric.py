"""The Cityscapes torchmetrics metric agrees with the official-format scorer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tasks.cityscapes import KEYS
from tasks.cityscapes.data import CityscapesDataModule
from tasks.cityscapes.fixtures import write_tiny_cityscapes
from tasks.cityscapes.metric import CityscapesIoU
from tasks.cityscapes.score import label_table, score


def test_metric_equals_scorer_on_random_train_id_predictions(tmp_path: Path) -> None:
    root = write_tiny_cityscapes(tmp_path / "cs")
    dm = CityscapesDataModule(root, batch_size=3)
    dm.setup()
    generator = torch.Generator().manual_seed(0)
    metric, index = CityscapesIoU(), 0
    for _, target in dm.val_dataloader():  # batches of 3 and 1
        noise = torch.randint(0, 20, target.shape, generator=generator)  # 19 = "not a class": a miss
        preds = torch.where(torch.rand(target.shape, generator=generator) < 0.4, noise, target.clamp(max=18))
        metric.update(preds, target)
        for pred in preds:
            dm.write_prediction(tmp_path / "pred", index, pred)
            index += 1
    ours = {k: float(v) for k, v in metric.compute().items()}
    assert list(ours) == list(KEYS)
    assert ours == pytest.approx(score(dm.references, tmp_path / "pred"), nan_ok=True)


def test_scores_are_arg_maxed_and_ignore_index_skipped() -> None:
    target = torch.tensor([[[0, 0], [1, 255]]])
    logits = torch.zeros(1, 19, 2, 2)
    logits[0, 0] = 1.0  # predicts road (0) everywhere
    metric = CityscapesIoU()
    metric.update(logits, target)
    result = metric.compute()
    # road: TP 2, FP 1 (the sidewalk pixel); the ignored pixel predicted as road is not counted
    assert float(result["iou_road"]) == pytest.approx(200 / 3) and float(result["iou_sidewalk"]) == 0.0
    assert int(metric.confusion.sum()) == 3


def test_deterministic_fallback_counts_the_same() -> None:
    target = torch.randint(0, 19, (2, 8, 8), generator=torch.Generator().manual_seed(1))
    preds = torch.randint(0, 19, (2, 8, 8), generator=torch.Generator().manual_seed(2))
    plain = CityscapesIoU()
    plain.update(preds, target)
    torch.use_deterministic_algorithms(True)
    try:
        fallback = CityscapesIoU()
        fallback.update(preds, target)
    finally:
        torch.use_deterministic_algorithms(False)
    assert torch.equal(plain.confusion, fallback.confusion)


def test_bad_targets_are_rejected() -> None:
    with pytest.raises(ValueError, match="train ids 0..18"):
        CityscapesIoU().update(torch.zeros(1, 2, 2, dtype=torch.long), torch.full((1, 2, 2), 30))
    with pytest.raises(ValueError, match="differ in shape"):
        CityscapesIoU().update(torch.zeros(1, 2, 3, dtype=torch.long), torch.zeros(1, 2, 2, dtype=torch.long))


def test_label_id_png_of_train_ids_round_trips(tmp_path: Path) -> None:
    ids = np.arange(19, dtype=np.uint8).reshape(1, 19)
    Image.fromarray(np.asarray(label_table().eval_ids, dtype=np.uint8).reshape(1, 19)).save(tmp_path / "a.png")
    assert label_table().train_id_of[np.array(Image.open(tmp_path / "a.png"))].tolist() == ids.tolist()
