"""The shared Wide-ResNet and BERT-style encoder: parameter counts from the configuration equal the built modules'
(WRN-28-2: the ~1.5M of UDA's Table 3; WRN-28-10: the 36.5M of Zagoruyko & Komodakis; BERT base: 110M), and the
shapes through each."""

from __future__ import annotations

import pytest
import torch

from nets.bert import SIZES, bert_classifier, encoder_parameter_count
from nets.wide_resnet import WideResNet, parameter_count, wide_resnet


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize(("depth", "widen", "classes", "channels"), [(28, 2, 10, 3), (10, 1, 10, 1), (16, 4, 100, 3)])
def test_wide_resnet_parameters_match_the_configuration(depth: int, widen: int, classes: int, channels: int) -> None:
    assert _count(wide_resnet(depth, widen, classes, channels)) == parameter_count(depth, widen, classes, channels)


def test_the_published_wide_resnet_sizes() -> None:
    assert parameter_count(28, 2, 10) == 1_467_610  # UDA / MixMatch's WRN-28-2, "1.5M"
    assert round(parameter_count(28, 10, 10) / 1e6, 1) == 36.5  # WRN-28-10, Zagoruyko & Komodakis Table 4


def test_wide_resnet_shapes_and_depth_check() -> None:
    net = wide_resnet(10, 1, 7, 1)
    assert net(torch.zeros(2, 1, 28, 28)).shape == (2, 7)
    with pytest.raises(ValueError, match="6n \\+ 4"):
        WideResNet(depth=12)


def test_bert_parameters_match_the_configuration() -> None:
    assert encoder_parameter_count(SIZES["base"]) == 109_482_240  # BERT base: 110M
    assert encoder_parameter_count(SIZES["large"]) == 335_141_888  # BERT large: 340M
    budget = bert_classifier("budget", 45)
    assert _count(budget.encoder) == encoder_parameter_count(SIZES["budget"])
    ids = torch.tensor([[1, 5, 9, 0, 0], [1, 7, 0, 0, 0]])
    assert budget.eval()(ids).shape == (2, 45)
    # padding never changes a text's logits
    assert torch.allclose(budget(ids)[:1], budget(ids[:1, :3]), atol=1e-5)
