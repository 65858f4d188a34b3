"""The budget tier's pair (ResNet-10 with and without attention augmentation on Fashion-MNIST): placement, comparable
sizes, one training step of the classifier system."""

from __future__ import annotations

import math

import pytest
import pytorch_lightning as pl
import torch

from reproductions.attention_augmented.model import AugmentedConv2d, build_budget
from reproductions.attention_augmented.system import AttentionAugmentedSystem
from tasks.fashion_mnist.data import ArrayDataModule, write_digits_idx

GOLDEN_PARAMS = {"resnet10-w16": 308_538, "aa-resnet10-w16": 294_246}


@pytest.mark.parametrize("name", list(GOLDEN_PARAMS))
def test_budget_params_golden(name):
    assert sum(p.numel() for p in build_budget(name).parameters()) == GOLDEN_PARAMS[name]


def test_the_pair_differs_only_by_augmentation_at_comparable_size():
    plain, aa = build_budget("resnet10-w16"), build_budget("aa-resnet10-w16")
    assert not any(isinstance(m, AugmentedConv2d) for m in plain.modules())
    layers = [block.conv1 for stage in aa.stages for block in stage]
    assert [isinstance(layer, AugmentedConv2d) for layer in layers] == [False, True, True, True]
    first = layers[1]  # 32 channels at 14 px: kappa = upsilon = 0.25 -> dk = dv = 8 over 4 heads, pooled to 7 px
    assert (first.attention.dk, first.attention.dv, first.attention.heads, first.pools) == (8, 8, 4, 2)
    assert first.attention.rel_height.shape == (13, 2)  # the 7 x 7 map it attends over
    assert abs(GOLDEN_PARAMS["aa-resnet10-w16"] / GOLDEN_PARAMS["resnet10-w16"] - 1) < 0.05
    x = torch.randn(2, 1, 28, 28)
    assert plain(x).shape == aa(x).shape == (2, 10)


def test_one_training_step_of_the_budget_system(tmp_path):
    write_digits_idx(tmp_path)
    data = ArrayDataModule(dataset="digits", data_root=str(tmp_path), batch_size=32, train_size=64)
    torch.manual_seed(0)
    system = AttentionAugmentedSystem("aa-resnet10-w16", num_classes=10, image_size=28, lr=0.2, warmup_epochs=0.0)
    trainer = pl.Trainer(max_steps=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0)  # fmt: skip
    trainer.fit(system, datamodule=data)
    assert math.isfinite(trainer.callback_metrics["train/loss"].item())
    assert trainer.callback_metrics["train/lr"].item() == pytest.approx(0.2 * 32 / 256)
    (results,) = trainer.test(system, datamodule=data, verbose=False)
    assert set(results) == {"test/top1", "test/top5", "test/error"}


@pytest.mark.parametrize("name", list(GOLDEN_PARAMS))
def test_channels_last_is_the_same_computation(name):
    """The budget config's ``channels_last`` changes the memory order only: same parameters, same outputs and
    gradients up to float round-off."""
    torch.manual_seed(0)
    plain = AttentionAugmentedSystem(name, num_classes=10, image_size=28)
    torch.manual_seed(0)
    nhwc = AttentionAugmentedSystem(name, num_classes=10, image_size=28, channels_last=True)
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), nhwc.parameters(), strict=True))
    last_conv = max((m for m in nhwc.modules() if isinstance(m, torch.nn.Conv2d)), key=lambda m: m.weight.numel())
    assert last_conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert not last_conv.weight.is_contiguous()
    images = torch.randn(8, 1, 28, 28)
    out_plain, out_nhwc = plain(images), nhwc(images)
    torch.testing.assert_close(out_nhwc, out_plain, rtol=1e-4, atol=1e-5)
    out_plain.square().sum().backward()
    out_nhwc.square().sum().backward()
    for a, b in zip(plain.parameters(), nhwc.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-3, atol=1e-4)
