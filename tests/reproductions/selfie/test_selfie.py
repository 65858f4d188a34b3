"""Selfie: patches, the patch-selection loss on a tiny case, pre-training shapes, weight sharing, configs."""

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
from harness.runner import load_config, resolve_config
from reproductions.selfie.model import SelfieNet, build, finetune_network, patchify, selfie_logits, selfie_loss
from reproductions.selfie.system import SelfieSystem, phase_lr
from reproductions.selfie.variants import NETWORKS, PRETEXT

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "selfie" / "configs"


def test_patchify_row_major():
    images = torch.arange(16.0).reshape(1, 1, 4, 4)
    patches = patchify(images, 2)
    assert patches.shape == (1, 4, 1, 2, 2)
    assert patches[0, 1, 0].tolist() == [[2.0, 3.0], [6.0, 7.0]]  # top-right patch
    assert patches[0, 2, 0].tolist() == [[8.0, 9.0], [12.0, 13.0]]  # bottom-left patch
    with pytest.raises(ValueError, match="grid"):
        patchify(torch.zeros(1, 1, 5, 5), 2)


def test_selfie_loss_tiny_case():
    """Two masked locations, d = 2: scores (u + pos_i) . h_j, cross-entropy on the diagonal."""
    u = torch.tensor([[1.0, 0.0]])
    positions = torch.tensor([[[0.0, 1.0], [1.0, -1.0]]])  # (1, M=2, 2)
    candidates = torch.tensor([[[2.0, 1.0], [0.0, 3.0]]])  # h of the patches that were at the two locations
    logits = selfie_logits(u, positions, candidates)
    # query 0 = (1, 1): scores 3, 3; query 1 = (2, -1): scores 3, -3
    assert logits.tolist() == [[[3.0, 3.0], [3.0, -3.0]]]
    loss, accuracy = selfie_loss(logits)
    expected = (math.log(2.0) + (math.log(math.exp(3.0) + math.exp(-3.0)) + 3.0)) / 2
    assert loss.item() == pytest.approx(expected)
    assert accuracy.item() == pytest.approx(0.5)  # location 0: a tie, argmax takes index 0 (right); location 1: wrong


def test_pretraining_forward_backward_and_weight_sharing():
    torch.manual_seed(0)
    model = build("selfie-resnet18-w16", num_classes=10)
    assert isinstance(model, SelfieNet)
    images = torch.randn(3, 3, 32, 32)
    masked = torch.tensor([[0, 5, 10, 15], [1, 2, 3, 4], [15, 14, 13, 12]])
    logits = model.pretrain_logits(images, masked)
    assert logits.shape == (3, 4, 4)
    loss, _ = selfie_loss(logits)
    loss.backward()
    stage3 = model.resnet.stages[2][0].conv1.weight
    assert stage3.grad is not None and model.resnet.stages[3][0].conv1.weight.grad is None  # conv5_x is not in P
    assert model.forward(images).shape == (3, 10)  # fine-tuning reuses the very same modules


def test_pretraining_ignores_where_masked_patches_came_from_only_through_positions():
    """Permuting the masked candidates permutes the columns of the scores: the loss needs the positions."""
    torch.manual_seed(0)
    model = build("selfie-resnet18-w16", num_classes=10).eval()
    images = torch.randn(1, 3, 32, 32)
    a = model.pretrain_logits(images, torch.tensor([[1, 7, 9, 12]]))
    b = model.pretrain_logits(images, torch.tensor([[7, 1, 9, 12]]))
    assert torch.allclose(a[0, [1, 0, 2, 3]][:, [1, 0, 2, 3]], b[0], atol=1e-5)


def test_builders_and_variants():
    assert not isinstance(build("supervised-resnet50-32"), SelfieNet)
    assert sum(p.numel() for p in finetune_network("selfie-resnet50").parameters()) == 25_557_032  # ResNet-50
    assert PRETEXT[224].grid == 7 and PRETEXT[32].grid == 4
    assert {n.image_size for n in NETWORKS.values()} == {224, 32}
    with pytest.raises(ValueError, match="unknown Selfie model"):
        build("selfie-vgg")


def test_phase_lr_warmup_then_cosine():
    assert phase_lr(0.0, 0.1, 0.1) == 0.0
    assert phase_lr(0.05, 0.1, 0.1) == pytest.approx(0.05)
    assert phase_lr(0.1, 0.1, 0.1) == pytest.approx(0.1)
    assert phase_lr(0.55, 0.1, 0.1) == pytest.approx(0.05)
    assert phase_lr(1.0, 0.1, 0.1) == pytest.approx(0.0, abs=1e-12)


def test_supervised_models_cannot_pretrain():
    with pytest.raises(HarnessError, match="no pre-training"):
        SelfieSystem("supervised-resnet18-w16", num_classes=10, pretrain_epochs=1)


class _Phases(pl.LightningDataModule):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.data = TensorDataset(torch.randn(8, 3, 32, 32, generator=g), torch.randint(0, 10, (8,), generator=g))

    def train_dataloader(self):
        return DataLoader(self.data, batch_size=4)

    def test_dataloader(self):
        return DataLoader(self.data, batch_size=4)


def test_two_phases_in_one_fit():
    torch.manual_seed(0)
    system = SelfieSystem("selfie-resnet18-w16", num_classes=10, pretrain_epochs=1)
    trainer = pl.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0)  # fmt: skip
    trainer.fit(system, datamodule=_Phases())
    assert {"pretrain/loss", "pretrain/patch_accuracy", "train/loss"} <= trainer.callback_metrics.keys()
    (results,) = trainer.test(system, datamodule=_Phases(), verbose=False)
    assert set(results) == {"test/top1", "test/top5", "test/error"}


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_configs_are_valid(path):
    tier = path.stem.split("-", 1)[0]  # full-cifar10 and budget-long are variants of their tier
    config = load_config(path, tier)
    for model in [config["model"], *(config.get("overrides") or {})]:
        resolved = resolve_config(config, tier, model, None, None)
        system, data = resolved["system"], resolved["data"]
        assert load_object(system["class_path"]) is SelfieSystem
        inspect.signature(SelfieSystem).bind(model=model, **system["init_args"])
        assert system["init_args"].get("pretrain_epochs", 0) == data["init_args"]["pretrain_epochs"]
        assert (system["init_args"]["pretrain_epochs"] > 0) == NETWORKS[model].selfie
        options = data["init_args"]["options"]
        inspect.signature(load_object(data["init_args"]["data_class"])).bind(data_root="x", **options)
        assert resolved["trainer"].get("reload_dataloaders_every_n_epochs") == 1
