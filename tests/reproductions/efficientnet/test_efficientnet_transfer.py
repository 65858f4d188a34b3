"""EfficientNet Table 5 transfer: ImageNet weights loaded all but the classifier, and the full-<dataset> configs."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import save_file

from harness import registry
from harness.errors import HarnessError
from harness.registry import load_object
from harness.runner import load_config, resolve_config, run_training
from reproductions.efficientnet.model import efficientnet
from reproductions.efficientnet.system import CLASSIFIER_KEYS, EfficientNetSystem, load_pretrained
from reproductions.efficientnet.variants import VARIANTS, eval_crop_fraction
from tasks.transfer.fixtures import write_tiny_pets

PAPER = Path(__file__).resolve().parents[3] / "reproductions" / "efficientnet"
TRANSFER_CONFIGS = sorted((PAPER / "configs").glob("full-*.yaml"))
CLAIMS = yaml.safe_load((PAPER / "claims.yaml").read_text())["claims"]


@pytest.fixture(scope="module")
def imagenet_like() -> dict[str, torch.Tensor]:
    """A B0 state dict with a 20-class head, standing in for ImageNet weights (1000 classes) to fine-tune from."""
    torch.manual_seed(1)
    return efficientnet("b0", num_classes=20).state_dict()


def _save(state: dict[str, torch.Tensor], path: Path) -> Path:
    if path.suffix == ".safetensors":
        save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    else:
        torch.save(state, path)
    return path


@pytest.mark.parametrize("kind", ["safetensors", "state_dict", "lightning"])
def test_init_checkpoint_loads_everything_but_the_classifier(tmp_path, imagenet_like, kind):
    if kind == "lightning":
        path = tmp_path / "w.ckpt"
        torch.save({"state_dict": {f"model.{k}": v for k, v in imagenet_like.items()}}, path)
    else:
        path = _save(imagenet_like, tmp_path / ("w.safetensors" if kind == "safetensors" else "w.pt"))
    torch.manual_seed(0)
    fresh = EfficientNetSystem("efficientnet-b0", num_classes=10).model.state_dict()
    torch.manual_seed(0)
    system = EfficientNetSystem("efficientnet-b0", num_classes=10, init_checkpoint=str(path))
    loaded = system.model.state_dict()
    for key, value in imagenet_like.items():
        if key not in CLASSIFIER_KEYS:
            assert torch.equal(loaded[key], value), key
    assert loaded["classifier.weight"].shape == (10, 1280)
    for key in CLASSIFIER_KEYS:  # the new head keeps its own initialisation
        assert torch.equal(loaded[key], fresh[key])


def test_init_checkpoint_with_the_same_head_size_still_starts_a_new_classifier(tmp_path):
    torch.manual_seed(1)
    source = efficientnet("b0", num_classes=10).state_dict()
    model = efficientnet("b0", num_classes=10)
    before = model.classifier.weight.detach().clone()
    load_pretrained(model, _save(source, tmp_path / "w.safetensors"))
    assert torch.equal(model.classifier.weight, before)
    assert torch.equal(model.stem[0].weight, source["stem.0.weight"])


def test_init_checkpoint_errors_name_the_file(tmp_path, imagenet_like):
    missing = tmp_path / "efficientnet-b0-imagenet.safetensors"
    with pytest.raises(HarnessError, match="efficientnet-b0-imagenet.safetensors: init_checkpoint not found"):
        EfficientNetSystem("efficientnet-b0", num_classes=10, init_checkpoint=str(missing))
    partial = {k: v for k, v in imagenet_like.items() if not k.startswith("head.")}
    with pytest.raises(HarnessError, match=r"partial\.pt: .*missing \['head\."):
        load_pretrained(efficientnet("b0", num_classes=10), _save(partial, tmp_path / "partial.pt"))
    extra = {**imagenet_like, "extra.weight": torch.zeros(1)}
    with pytest.raises(HarnessError, match=r"extra\.pt: .*unexpected \['extra\.weight'\]"):
        load_pretrained(efficientnet("b0", num_classes=10), _save(extra, tmp_path / "extra.pt"))
    wrong = {**imagenet_like, "stem.0.weight": torch.zeros(8, 3, 3, 3)}  # a shape mismatch outside the classifier
    with pytest.raises(HarnessError, match=r"(?s)wrong\.pt: .*size mismatch for stem\.0\.weight"):
        load_pretrained(efficientnet("b0", num_classes=10), _save(wrong, tmp_path / "wrong.pt"))


def test_checkpoint_and_init_checkpoint_exclude_each_other(tmp_path, imagenet_like):
    path = str(_save(imagenet_like, tmp_path / "w.pt"))
    with pytest.raises(HarnessError, match="not both"):
        EfficientNetSystem("efficientnet-b0", num_classes=10, checkpoint=path, init_checkpoint=path)


def test_a_transfer_config_per_dataset_with_a_data_module():
    assert {p.stem for p in TRANSFER_CONFIGS} >= {
        "full-cifar-10",
        "full-cifar-100",
        "full-food-101",
        "full-oxford-pets",
    }


def _models(config: dict) -> list[str]:
    return [config["model"], *(config.get("overrides") or {})]


@pytest.mark.parametrize("path", TRANSFER_CONFIGS, ids=lambda p: p.stem)
def test_transfer_configs_resolve_for_every_model_they_name(path):
    config = load_config(path, "full")
    assert config["tier"] == "full"
    for model in _models(config):
        resolved = resolve_config(config, "full", model, None, None)
        system, data = resolved["system"], resolved["data"]
        assert load_object(system["class_path"]) is EfficientNetSystem
        bound = inspect.signature(EfficientNetSystem).bind(model=model, **system["init_args"])
        EfficientNetSystem.RECIPE.given(bound.arguments.get("recipe", {}), "EfficientNetSystem")
        data_class = load_object(data["class_path"])
        inspect.signature(data_class).bind(**data["init_args"])
        resolution = VARIANTS[model.removeprefix("efficientnet-")].resolution
        assert data["init_args"]["image_size"] == resolution
        assert "image_size" not in system["init_args"]  # the system expects the variant's own resolution
        assert data["init_args"]["crop_fraction"] == pytest.approx(eval_crop_fraction(resolution), abs=1e-6)
        assert system["init_args"]["init_checkpoint"] == f"checkpoints/{model}-imagenet.safetensors"
        datamodule = data_class(**{**data["init_args"], "data_root": "unused"})
        assert system["init_args"]["num_classes"] == datamodule.num_classes


@pytest.mark.parametrize("path", TRANSFER_CONFIGS, ids=lambda p: p.stem)
def test_transfer_configs_match_the_table_5_claims(path):
    """Every model a config runs has a Table 5 top-1 claim on the same dataset, split and protocol, and back."""
    config = load_config(path, "full")
    (entry,) = config["evaluate"]
    claims = {
        c["model"]
        for c in CLAIMS
        if c["id"].startswith("t5-") and c["metric"] == "top1" and c["dataset"] == entry["dataset"]
        and c["split"] == entry["split"] and c["protocol"] == config["protocol"]
    }  # fmt: skip
    assert claims == set(_models(config))
    assert config["data"]["init_args"]["dataset"] == entry["dataset"]


def test_the_pets_config_fine_tunes_end_to_end_when_shrunk_to_cpu(tmp_path, imagenet_like):
    """full-oxford-pets.yaml through the runner on a tiny Pets copy at 32 px: weights in, one epoch, one record."""
    config = load_config(PAPER / "configs" / "full-oxford-pets.yaml", "full")
    resolved = resolve_config(config, "full", "efficientnet-b0", 0, str(write_tiny_pets(tmp_path / "pets")))
    weights = _save(imagenet_like, tmp_path / "b0-imagenet.safetensors")
    resolved["system"]["init_args"].update(init_checkpoint=str(weights), image_size=32, warmup_epochs=0.0)
    resolved["data"]["init_args"].update(batch_size=3, image_size=32, crop_fraction=1.0, num_workers=0)
    resolved["trainer"] = dict(max_epochs=1, accelerator="cpu", devices=1, enable_checkpointing=False,
                               enable_progress_bar=False, enable_model_summary=False,
                               default_root_dir=str(tmp_path / "lightning"))  # fmt: skip
    (path,) = run_training(registry.reproduction("efficientnet"), resolved, runs_dir=tmp_path / "runs")
    record = yaml.safe_load(path.read_text())
    assert (record["dataset"], record["split"], record["model"]) == ("oxford-pets", "test", "efficientnet-b0")
    assert record["protocol"] == "fine-tuned from ImageNet checkpoint"
    assert set(record["metrics"]) == {"top1", "top5", "error"}
    assert record["provenance"]["data_hash"]
