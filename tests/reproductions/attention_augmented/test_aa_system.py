"""AA-ResNet Lightning system: model ids, the official ResNet schedule, one training step, metrics, configs."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from harness.errors import HarnessError
from harness.registry import load_object
from harness.runner import load_config
from reproductions.attention_augmented import REPRODUCTION
from reproductions.attention_augmented.detection import AARetinaNetSystem
from reproductions.attention_augmented.system import AttentionAugmentedSystem, parse_model, step_schedule
from reproductions.attention_augmented.variants import DETECTORS

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "attention_augmented" / "configs"


def _loader(n: int = 4, size: int = 32) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    return DataLoader(TensorDataset(torch.randn(n, 3, size, size, generator=g), torch.randint(0, 10, (n,), generator=g)),
                      batch_size=2)  # fmt: skip


def _trainer(**kwargs) -> pl.Trainer:
    options = dict(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                   enable_model_summary=False)  # fmt: skip
    return pl.Trainer(**{**options, **kwargs})


def test_parse_model():
    assert parse_model("aa-resnet50") == (50, True) and parse_model("resnet152") == (152, False)
    for bad in ("aa-resnet18", "resnet-50", "aa-resnet", "efficientnet-b0"):
        with pytest.raises(HarnessError, match="aa-resnet50"):
            parse_model(bad)
    imagenet = [f"{p}resnet{d}" for d in (34, 50, 101, 152) for p in ("", "aa-")]
    detectors = [f"retinanet-{p}resnet{d}" for d in (50, 101) for p in ("", "aa-")]
    assert REPRODUCTION.model_ids() == [*imagenet, *detectors, "resnet10-w16", "aa-resnet10-w16"]


def test_official_step_schedule():
    total, spe = 9000, 100.0  # a 90-epoch run of 100 steps per epoch
    assert step_schedule(0, total, spe) == 0.0
    assert step_schedule(250, total, spe) == pytest.approx(0.5)  # warm-up over 5 epochs
    assert step_schedule(2999, total, spe) == 1.0
    assert step_schedule(3000, total, spe) == pytest.approx(0.1)  # epoch 30
    assert step_schedule(6000, total, spe) == pytest.approx(0.01)  # epoch 60
    assert step_schedule(8000, total, spe) == pytest.approx(0.001)  # epoch 80


def test_one_training_step_and_test_metrics():
    torch.manual_seed(0)
    system = AttentionAugmentedSystem("aa-resnet50", num_classes=10, image_size=32, warmup_epochs=0.0)
    before = system.model.fc.weight.clone()
    trainer = _trainer(max_steps=1, limit_val_batches=0)
    trainer.fit(system, train_dataloaders=_loader())
    assert math.isfinite(trainer.callback_metrics["train/loss"].item())
    assert trainer.callback_metrics["train/lr"].item() == pytest.approx(0.1 * 2 / 256)  # batch 2, 0.1 per 256
    assert not torch.equal(before, system.model.fc.weight)
    (results,) = trainer.test(system, dataloaders=_loader(), verbose=False)
    assert set(results) == {"test/top1", "test/top5", "test/error"}
    with pytest.raises(HarnessError, match="32x32"):
        system.test_step((torch.randn(2, 3, 40, 40), torch.zeros(2, dtype=torch.long)), 0)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_configs_are_valid(path):
    """Every tier and variant (``<tier>-<variant>.yaml``) binds to its system and data module; the classifier
    configs feed the resolution the system expects, the detection ones name one of the paper's detectors."""
    config = load_config(path, path.stem.split("-", 1)[0])
    system = load_object(config["system"]["class_path"])
    assert system in (AttentionAugmentedSystem, AARetinaNetSystem)
    models = [config["model"], *(config.get("overrides") or {})]
    assert all(model in REPRODUCTION.model_ids() for model in models)
    for model in models:
        inspect.signature(system).bind(model=model, **config["system"]["init_args"])
    data = config["data"]
    inspect.signature(load_object(data["class_path"])).bind(**data["init_args"])
    if system is AARetinaNetSystem:
        assert config["model"] in DETECTORS
    elif "image_size" in data["init_args"]:
        assert data["init_args"]["image_size"] == config["system"]["init_args"]["image_size"]
