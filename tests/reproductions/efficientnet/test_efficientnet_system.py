"""EfficientNet Lightning system: the official recipe's pieces, one real training step, metrics, weights, configs."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
from safetensors.torch import save_file
from torch.utils.data import DataLoader, TensorDataset

from harness import configfile
from harness.contract import loader_metrics
from harness.errors import HarnessError
from harness.registry import load_object
from harness.runner import load_config
from nets.systems.steps import l2_param_groups
from reproductions.efficientnet.model import efficientnet
from reproductions.efficientnet.system import EfficientNetSystem, parse_variant
from reproductions.efficientnet.variants import VARIANTS

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "efficientnet" / "configs"


def _loader(n: int = 8, size: int = 32, classes: int = 10, batch_size: int = 4) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    images = torch.randn(n, 3, size, size, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    return DataLoader(TensorDataset(images, labels), batch_size=batch_size)


def _trainer(**kwargs) -> pl.Trainer:
    options = dict(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    return pl.Trainer(**{**options, **kwargs})


def _system(**kwargs) -> EfficientNetSystem:
    torch.manual_seed(0)
    return EfficientNetSystem("efficientnet-b0", num_classes=10, image_size=32, **kwargs)


def test_parse_variant():
    assert parse_variant("efficientnet-b7") == "b7"
    for bad in ("efficientnet-b9", "resnet-50", "b0"):
        with pytest.raises(HarnessError, match="efficientnet-b0"):
            parse_variant(bad)


def test_weight_decay_spares_batchnorm_only():
    system = _system()
    decayed, plain = l2_param_groups(system.model, 1e-5)
    n_bn = sum(p.numel() for m in system.model.modules() if isinstance(m, torch.nn.BatchNorm2d) for p in m.parameters())
    assert decayed["weight_decay"] == 1e-5 and plain["weight_decay"] == 0.0
    assert sum(p.numel() for p in plain["params"]) == n_bn
    # the official L2 covers the biases of non-BN layers too
    assert any(p is system.model.classifier.bias for p in decayed["params"])


def test_one_training_step_changes_the_weights():
    system = _system(warmup_epochs=0.0)
    before = {k: v.clone() for k, v in system.model.state_dict().items()}
    trainer = _trainer(max_steps=1, limit_val_batches=0)
    trainer.fit(system, train_dataloaders=_loader())
    assert math.isfinite(trainer.callback_metrics["train/loss"].item())
    # peak lr at a global batch of 4: 0.256 x 4 / 4096
    assert trainer.callback_metrics["train/lr"].item() == pytest.approx(0.256 * 4 / 4096)
    changed = [k for k, v in system.model.state_dict().items() if not torch.equal(before[k], v)]
    assert "classifier.weight" in changed and "stem.0.weight" in changed


def test_validation_and_test_log_percentages():
    system = _system()
    trainer = _trainer(max_epochs=1, limit_train_batches=1, limit_val_batches=1)
    trainer.fit(system, train_dataloaders=_loader(), val_dataloaders=_loader())
    assert {"val/top1", "val/top5", "val/error"} <= trainer.callback_metrics.keys()
    (results,) = trainer.test(system, dataloaders=_loader(), verbose=False)
    assert set(results) == {"test/top1", "test/top5", "test/error"}
    assert 0.0 <= results["test/top1"] <= results["test/top5"] <= 100.0
    assert results["test/error"] == pytest.approx(100.0 - results["test/top1"])


def test_several_test_loaders_get_their_own_metrics():
    system = _system()
    results = _trainer().test(system, dataloaders=[_loader(), _loader(n=4)], verbose=False)
    keys = [{f"test/{m}/dataloader_idx_{i}" for m in ("error", "top1", "top5")} for i in range(2)]
    assert all(set(r) == keys[0] | keys[1] for r in results)  # logged at the epoch's end: every loader's results
    assert [sorted(loader_metrics(r, i)) for i, r in enumerate(results)] == [["error", "top1", "top5"]] * 2


def test_wrong_resolution_is_refused():
    with pytest.raises(HarnessError, match="32x32"):
        _system().test_step((torch.randn(2, 3, 40, 40), torch.zeros(2, dtype=torch.long)), 0)


@pytest.mark.parametrize("kind", ["safetensors", "state_dict", "lightning"])
def test_load_weights(tmp_path, kind):
    torch.manual_seed(1)
    source = efficientnet("b0", num_classes=10)
    state = source.state_dict()
    if kind == "safetensors":
        path = tmp_path / "w.safetensors"
        save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    else:
        path = tmp_path / "w.pt"
        payload = {"state_dict": {f"model.{k}": v for k, v in state.items()}} if kind == "lightning" else state
        torch.save(payload, path)
    system = _system(checkpoint=str(path))
    assert all(torch.equal(v, system.model.state_dict()[k]) for k, v in state.items())


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_configs_are_valid_for_the_runner_and_the_system(path):
    tier = path.stem.split("-", 1)[0]  # full-cifar-10.yaml is a variant of the full tier
    config = load_config(path, tier)
    assert config["tier"] == tier
    system_cls = load_object(config["system"]["class_path"])
    assert system_cls is EfficientNetSystem
    bound = inspect.signature(system_cls).bind(model=config["model"], **config["system"]["init_args"])
    system_cls.RECIPE.given(bound.arguments.get("recipe", {}), system_cls.__name__)  # the rest: recipe fields
    data = config["data"]
    inspect.signature(load_object(data["class_path"])).bind(**data["init_args"])
    default_size = VARIANTS[parse_variant(config["model"])].resolution
    assert data["init_args"]["image_size"] == config["system"]["init_args"].get("image_size", default_size)
    if "prepare" in config:
        inspect.signature(load_object(config["prepare"]["function"])).bind(root=Path("x"), **config["prepare"]["args"])


def test_config_tiers_present():
    assert {p.stem for p in CONFIGS.glob("*.yaml")} >= {"smoke", "full", "weights"}
    smoke = configfile.read(CONFIGS / "smoke.yaml").tree
    assert smoke["prepare"]["function"] == "tasks.imagenet.fixtures:write_digits_ilsvrc"
    assert smoke["evaluate"] == [{"dataset": "digits", "split": "val"}]
