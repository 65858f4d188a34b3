"""CondConv Lightning system: one real training step through CondConv layers, and the configs."""

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
from reproductions.condconv.system import CondConvSystem

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "condconv" / "configs"


def test_one_training_step_updates_experts_and_routing():
    torch.manual_seed(0)
    system = CondConvSystem("condconv-mobilenetv1-0.25-8e", num_classes=10, image_size=32, warmup_epochs=0.0)
    before = {k: v.clone() for k, v in system.model.state_dict().items()}
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(8, 3, 32, 32, generator=g), torch.randint(0, 10, (8,), generator=g))
    trainer = pl.Trainer(accelerator="cpu", devices=1, max_steps=1, limit_val_batches=0, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    trainer.fit(system, train_dataloaders=DataLoader(data, batch_size=4))
    assert math.isfinite(trainer.callback_metrics["train/loss"].item())
    changed = {k for k, v in system.model.state_dict().items() if not torch.equal(before[k], v)}
    assert {"features.13.pointwise.conv.weight", "features.13.routing.fc.weight", "classifier.conv.weight"} <= changed


def test_unknown_model_and_dropout_default():
    with pytest.raises(HarnessError, match="efficientnet-condconv-b0-8e"):
        CondConvSystem("mobilenetv3-large-1.0")
    assert CondConvSystem("efficientnet-condconv-b0-4e", num_classes=10).model.dropout.p == 0.25


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_configs_are_valid_for_the_runner_and_the_system(path):
    config = load_config(path, path.stem.split("-", 1)[0])  # budget-long is a variant of the budget tier
    system_cls = load_object(config["system"]["class_path"])
    assert system_cls is CondConvSystem
    bound = inspect.signature(system_cls).bind(model=config["model"], **config["system"]["init_args"])
    system_cls.RECIPE.given(bound.arguments.get("recipe", {}), system_cls.__name__)  # the rest: recipe fields
    data = config["data"]
    inspect.signature(load_object(data["class_path"])).bind(**data["init_args"])
    if "image_size" in data["init_args"]:  # the ImageNet-layout tiers; budget's Fashion-MNIST is 28x28 as stored
        assert data["init_args"]["image_size"] == config["system"]["init_args"]["image_size"]
