"""The shared backbones: the feature maps detectors take from them, and their published parameter counts."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nets.layers import set_bn
from nets.mobilenetv2 import MobileNetV2
from nets.resnet import resnet


def _params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_resnet50_has_the_published_count_and_c2_to_c5():
    model = resnet(50, num_classes=0)
    assert _params(model) + 2048 * 1000 + 1000 == 25_557_032  # He et al.'s ResNet-50 with its classifier (25.6M)
    features = model.features(torch.randn(1, 3, 64, 64))
    assert [tuple(f.shape[1:]) for f in features] == [(256, 16, 16), (512, 8, 8), (1024, 4, 4), (2048, 2, 2)]


def test_unknown_resnet_depth_is_refused():
    with pytest.raises(ValueError, match="unknown ResNet depth 42"):
        resnet(42)


def test_mobilenetv2_gives_c3_c4_c5_at_strides_8_16_32():
    model = MobileNetV2()
    features = model.features(torch.randn(1, 3, 64, 64))
    assert [tuple(f.shape[1:]) for f in features] == [(32, 8, 8), (96, 4, 4), (1280, 2, 2)]
    assert model.out_channels == (32, 96, 1280)


def test_set_bn_sets_momentum_and_optionally_eps():
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm2d(4)))
    set_bn(model, 0.003, 1e-4)
    assert {(m.momentum, m.eps) for m in model.modules() if isinstance(m, nn.BatchNorm2d)} == {(0.003, 1e-4)}
    set_bn(model, 0.01)
    assert {(m.momentum, m.eps) for m in model.modules() if isinstance(m, nn.BatchNorm2d)} == {(0.01, 1e-4)}
