"""MobileNetV3 Lightning system: the Section 6.1 recipe's pieces, one real training step, metrics, weights, configs."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
from safetensors.torch import save_file
from torch.utils.data import DataLoader, TensorDataset

from harness.errors import HarnessError
from harness.registry import load_object
from harness.runner import load_config
from reproductions.mobilenetv3 import REPRODUCTION
from reproductions.mobilenetv3.model import mobilenetv3
from reproductions.mobilenetv3.system import LRASPPSystem, MobileNetV3System, SSDLiteSystem, parse_variant

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "mobilenetv3" / "configs"


def _loader(n: int = 8, size: int = 32, classes: int = 10, batch_size: int = 4) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    images = torch.randn(n, 3, size, size, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    return DataLoader(TensorDataset(images, labels), batch_size=batch_size)


def _trainer(**kwargs) -> pl.Trainer:
    options = dict(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                   enable_model_summary=False)  # fmt: skip
    return pl.Trainer(**{**options, **kwargs})


def _system(**kwargs) -> MobileNetV3System:
    torch.manual_seed(0)
    return MobileNetV3System("mobilenetv3-small-1.0", num_classes=10, image_size=32, **kwargs)


def test_parse_variant():
    assert parse_variant("mobilenetv3-small-0.75") == "small-0.75"
    for bad in ("mobilenetv3-large-1.0-lraspp", "efficientnet-b0", "large-1.0"):
        with pytest.raises(HarnessError, match="mobilenetv3-large-1.0"):
            parse_variant(bad)


def test_defaults_are_section_6_1():
    defaults = {k: v.default for k, v in inspect.signature(MobileNetV3System).parameters.items()}
    recipe = _system().recipe
    assert recipe == MobileNetV3System.RECIPE
    assert recipe.lr == 0.1 and recipe.lr_batch_size == 4096 and recipe.momentum == 0.9
    assert recipe.lr_decay_epochs == 3.0 and recipe.lr_decay_factor == 0.99 and recipe.warmup_epochs == 0.0
    assert defaults["dropout"] == 0.2 and recipe.weight_decay == 1e-5 and recipe.ema_decay == 0.9999
    assert defaults["bn_momentum"] == 0.01 and recipe.label_smoothing == 0.0


def test_a_config_value_replaces_the_recipe_s_and_an_unknown_one_is_named():
    system = _system(lr=0.05, ema_decay=0.0)
    assert system.recipe.lr == 0.05 and system.recipe.lr_decay_factor == 0.99  # the rest stays Section 6.1's
    assert system.hparams.lr == 0.05 and system.hparams.label_smoothing == 0.0  # the whole recipe in hparams
    with pytest.raises(HarnessError, match="MobileNetV3System takes no argument 'lr_decay' \\(did you mean"):
        _system(lr_decay=0.9)


def test_one_training_step_changes_the_weights():
    system = _system()
    before = {k: v.clone() for k, v in system.model.state_dict().items()}
    trainer = _trainer(max_steps=1, limit_val_batches=0)
    trainer.fit(system, train_dataloaders=_loader())
    assert math.isfinite(trainer.callback_metrics["train/loss"].item())
    assert trainer.callback_metrics["train/lr"].item() == pytest.approx(0.1 * 4 / 4096)  # lr scaled to batch 4
    changed = [k for k, v in system.model.state_dict().items() if not torch.equal(before[k], v)]
    assert "classifier.weight" in changed and "features.0.0.weight" in changed


def test_test_logs_percentages_and_refuses_wrong_resolution():
    system = _system(ema_decay=0.0)
    (results,) = _trainer().test(system, dataloaders=_loader(), verbose=False)
    assert set(results) == {"test/top1", "test/top5", "test/error"}
    assert results["test/error"] == pytest.approx(100.0 - results["test/top1"])
    with pytest.raises(HarnessError, match="32x32"):
        system.test_step((torch.randn(2, 3, 40, 40), torch.zeros(2, dtype=torch.long)), 0)


def test_load_weights_safely(tmp_path):
    torch.manual_seed(1)
    state = mobilenetv3("small-1.0", num_classes=10).state_dict()
    path = tmp_path / "w.safetensors"
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    system = _system(checkpoint=str(path))
    assert all(torch.equal(v, system.model.state_dict()[k]) for k, v in state.items())


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_configs_are_valid_for_the_runner_and_the_system(path):
    config = load_config(path, path.stem.split("-")[0])  # smoke-ssdlite.yaml is a variant of the smoke tier
    system_cls = load_object(config["system"]["class_path"])
    expected = {"ssdlite": SSDLiteSystem, "lraspp": LRASPPSystem}.get(path.stem.split("-")[-1], MobileNetV3System)
    assert system_cls is expected
    bound = inspect.signature(system_cls).bind(model=config["model"], **config["system"]["init_args"])
    if system_cls is MobileNetV3System:  # the rest: recipe fields
        system_cls.RECIPE.given(bound.arguments.get("recipe", {}), system_cls.__name__)
    data = config["data"]
    inspect.signature(load_object(data["class_path"])).bind(**data["init_args"])
    if system_cls is MobileNetV3System:
        assert data["init_args"]["image_size"] == config["system"]["init_args"]["image_size"]
    assert set(config.get("overrides", {})) <= set(REPRODUCTION.model_ids())
    assert {p.stem for p in CONFIGS.glob("*.yaml")} >= {"smoke", "full", "weights"}
