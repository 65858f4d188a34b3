"""NAS-FPN RetinaNet system: resizing, one training step on the tiny COCO fixture, pycocotools test metrics."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from harness.errors import HarnessError
from harness.registry import load_object
from harness.runner import load_config
from nets.systems.retinanet import resize_and_pad
from reproductions.nas_fpn.system import RetinaNetSystem, parse_model

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "nas_fpn" / "configs"


def test_resize_and_pad_keeps_boxes_aligned():
    image = torch.rand(3, 60, 120)
    boxes = torch.tensor([[10.0, 20.0, 50.0, 40.0]])
    out, scaled, scale, offset = resize_and_pad(image, boxes, 64)
    assert out.shape == (3, 64, 64) and scale == pytest.approx(64 / 120) and offset == (0, 0)
    assert torch.allclose(scaled, boxes * 64 / 120)
    assert out[:, 32:].abs().sum() == 0  # padded below the 32-row resized image
    torch.manual_seed(0)
    _, jittered, _, _ = resize_and_pad(image, boxes, 64, scale_jitter=(1.5, 1.5))
    assert (jittered >= 0).all() and (jittered <= 64).all()


def test_parse_model():
    assert parse_model("nasfpn-r50-7x256-640") == "nasfpn-r50-7x256-640"
    with pytest.raises(HarnessError, match="known"):
        parse_model("nasfpn-r18")


def test_one_training_step_and_coco_metrics(tmp_path):
    from tasks.coco.data import CocoDetectionDataModule
    from tasks.coco.fixtures import write_tiny_coco

    write_tiny_coco(tmp_path)
    data = CocoDetectionDataModule(tmp_path, batch_size=2)
    torch.manual_seed(0)
    system = RetinaNetSystem("nasfpnlite-mobilenetv2-3x48-320", image_size=128, warmup_steps=1)
    trainer = pl.Trainer(max_steps=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0,
                         limit_test_batches=1)  # fmt: skip
    trainer.fit(system, datamodule=data)
    assert math.isfinite(trainer.callback_metrics["train/loss"].item())
    (results,) = trainer.test(system, datamodule=data, verbose=False)
    assert set(results) == {f"test/{m}" for m in ("ap", "ap50", "ap75", "aps", "apm", "apl")}
    assert system.record_artifacts["coco_scorer"].startswith("pycocotools ")  # the reference, cited in the records


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_configs_are_valid(path):
    config = load_config(path, path.stem)
    assert load_object(config["system"]["class_path"]) is RetinaNetSystem
    inspect.signature(RetinaNetSystem).bind(model=config["model"], **config["system"]["init_args"])
    data = config["data"]
    inspect.signature(load_object(data["class_path"])).bind(**data["init_args"])
