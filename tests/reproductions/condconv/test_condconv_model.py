"""CondConv: the layer's equivalences, its counted cost, and the models against the release's numbers."""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F

from harness.profile import count_macs
from reproductions.condconv import REPRODUCTION
from reproductions.condconv.model import CondConv2d, CondMBConv, CondSeparable, Routing, build
from reproductions.condconv.variants import ALL_VARIANTS, BUDGET_VARIANTS

# Golden counts of this implementation at 224 px, 1000 classes.
GOLDEN = {  # id: (params, MACs)
    "condconv-baseline-efficientnet-b0": (5_288_548, 385_814_752),
    "efficientnet-condconv-b0-4e": (13_314_116, 396_513_888),
    "efficientnet-condconv-b0-8e": (24_013_284, 407_213_024),
    "efficientnet-condconv-b0-8e-depth": (39_715_968, 606_131_552),
    "condconv-baseline-mobilenetv1-1.0": (4_231_976, 568_740_352),
    "condconv-mobilenetv1-1.0-8e": (30_019_768, 598_206_784),
    "condconv-baseline-mobilenetv2-1.0": (3_504_872, 300_774_272),
    "condconv-mobilenetv2-1.0-8e": (23_340_288, 323_440_832),
    "condconv-baseline-mnasnet-a1": (3_887_038, 311_579_072),
    "condconv-mnasnet-a1-8e": (23_961_966, 334_519_424),
    "condconv-baseline-resnet-50": (25_557_032, 4_089_184_256),
    "condconv-resnet-50-8e": (129_872_800, 4_208_394_048),
}
# The release README (tensorflow/tpu models/official/efficientnet/condconv): params (M), MADDs (M).
RELEASE = {
    "condconv-baseline-efficientnet-b0": (5.3, 391),
    "efficientnet-condconv-b0-4e": (13.3, 402),
    "efficientnet-condconv-b0-8e": (24.0, 413),
    "efficientnet-condconv-b0-8e-depth": (39.7, 614),
}


@functools.cache
def _profile(variant: str) -> tuple[int, int]:
    torch.manual_seed(0)
    model = build(variant).eval()
    return sum(p.numel() for p in model.parameters()), count_macs(model, torch.randn(1, 3, 224, 224))


def _layer(groups: int = 1, stride: int = 1, bias: bool = True, experts: int = 3) -> tuple[CondConv2d, int]:
    torch.manual_seed(0)
    channels = 6
    layer = CondConv2d(channels, 6 if groups > 1 else 4, 3, experts, stride, 1, groups, bias)
    if bias:
        torch.nn.init.normal_(layer.bias)
    return layer, channels


@pytest.mark.parametrize(("groups", "stride"), [(1, 1), (1, 2), (6, 1), (6, 2)])
def test_grouped_conv_equals_per_example_loop_and_expert_sum(groups, stride):
    layer, channels = _layer(groups, stride)
    x = torch.randn(5, channels, 9, 9)
    r = torch.rand(5, layer.num_experts)
    y = layer(x, r)  # one grouped conv over the folded batch
    kernels = layer.mixed_kernels(r)
    bias = r @ layer.bias
    loop = torch.cat([F.conv2d(x[i : i + 1], kernels[i], bias[i], stride, 1, groups=groups) for i in range(5)])
    experts = sum(  # linear case: the conv of the mixed kernel is the mix of the experts' convs
        r[:, e, None, None, None] * F.conv2d(x, layer.weight[e], layer.bias[e], stride, 1, groups=groups)
        for e in range(layer.num_experts)
    )
    assert torch.allclose(y, loop, atol=1e-5) and torch.allclose(y, experts, atol=1e-5)


def test_one_expert_with_unit_routing_is_a_plain_conv():
    layer, channels = _layer(experts=1, bias=False)
    x = torch.randn(2, channels, 7, 7)
    assert torch.allclose(layer(x, torch.ones(2, 1)), F.conv2d(x, layer.weight[0], None, 1, 1), atol=1e-5)
    with pytest.raises(ValueError, match="at least one expert"):
        CondConv2d(4, 4, 1, 0)


def test_routing_is_a_sigmoid_of_the_pooled_input():
    routing = Routing(6, 4)
    x = torch.randn(3, 6, 5, 5)
    r = routing(x)
    assert r.shape == (3, 4) and ((r > 0) & (r < 1)).all()
    assert torch.allclose(r, torch.sigmoid(routing.fc(x.mean((2, 3)))))


def test_flop_counter_counts_the_mixing_matmul_and_one_conv_per_example():
    layer = CondConv2d(16, 32, 3, 8, padding=1)
    for batch in (1, 3):
        x, r = torch.randn(batch, 16, 10, 10), torch.rand(batch, 8)
        conv = batch * 32 * 10 * 10 * 16 * 9  # the static layer's multiply-adds per example
        mixing = batch * 8 * (32 * 16 * 9)  # (B, n) @ (n, |W|)
        assert count_macs(lambda t, r=r: layer(t, r), x) == conv + mixing


def test_condconv_block_cost_is_static_cost_plus_routing_and_mixing():
    block = CondSeparable(32, 64, 1, num_experts=4).eval()
    x = torch.randn(1, 32, 8, 8)
    static = 32 * 9 * 64 + 32 * 64 * 64  # depthwise + pointwise per position x 64 positions
    routing = 32 * 4
    mixing = 4 * (32 * 9) + 4 * (64 * 32)
    assert count_macs(block, x) == static + routing + mixing


def test_efficientnet_condconv_replaces_the_last_three_stages():
    model = build("efficientnet-condconv-b0-8e")
    kinds = [isinstance(b, CondMBConv) for b in model.blocks]
    assert kinds == [False] * 8 + [True] * 8  # stages 5-7: 3 + 4 + 1 blocks ("_cc" in the release)
    assert model.dropout.p == 0.25 and model.blocks[-1].routing.fc.out_features == 8
    assert build("condconv-baseline-efficientnet-b0").dropout.p == 0.2


def test_forward_backward_reaches_experts_and_routing():
    model = build("condconv-mobilenetv1-0.25-8e", num_classes=10).train()
    model(torch.randn(2, 3, 32, 32)).logsumexp(1).mean().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not missing
    assert model.features[-1].routing.fc.weight.grad.abs().sum() > 0


def test_registration():
    ids = REPRODUCTION.model_ids()
    assert len(ids) == len(set(ids)) == len(ALL_VARIANTS)
    with pytest.raises(ValueError, match="efficientnet-condconv-b0-8e"):
        build("condconv-resnet-101")


@pytest.mark.parametrize("variant", list(RELEASE))
def test_params_match_the_release_readme(variant):
    params = sum(p.numel() for p in build(variant).parameters())
    assert params == GOLDEN[variant][0]
    assert params / 1e6 == pytest.approx(RELEASE[variant][0], abs=0.05)


def test_mobilenetv1_baseline_params():
    params = sum(p.numel() for p in build("condconv-baseline-mobilenetv1-1.0").parameters())
    assert params == GOLDEN["condconv-baseline-mobilenetv1-1.0"][0]  # 4.2M, MobileNetV1 paper Table 8


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(GOLDEN))
def test_golden_counts(variant):
    assert _profile(variant) == GOLDEN[variant]


@pytest.mark.slow
def test_inference_cost_increase_matches_the_release():
    """CondConv adds routing + mixing only: +11M (4 experts) and +22M (8 experts) MADDs over B0 in the release."""
    base = _profile("condconv-baseline-efficientnet-b0")[1]
    for variant, release_increase in (("efficientnet-condconv-b0-4e", 11), ("efficientnet-condconv-b0-8e", 22)):
        increase = (_profile(variant)[1] - base) / 1e6
        assert increase == pytest.approx(release_increase, abs=1.0)
    ratio = _profile("condconv-mobilenetv1-1.0-8e")[1] / _profile("condconv-baseline-mobilenetv1-1.0")[1]
    assert 1.0 < ratio < 1.1  # CondConv in 6 layers + classifier: ~5% more multiply-adds, ~7x the parameters


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(
            v, marks=pytest.mark.xfail(reason="the release counts ~5-8M more for the B0 part; see README", strict=True)
        )
        for v in RELEASE
    ],
)
def test_macs_match_the_release_readme(variant):
    assert _profile(variant)[1] / 1e6 == pytest.approx(RELEASE[variant][1], abs=0.5)


# Baselines against their own papers: MobileNetV2 3.4M / 300M (arXiv 1801.04381 Table 4), MnasNet-A1 3.9M / 312M
# (arXiv 1807.11626 Table 1), ResNet-50 25.6M params (torchvision/TF count; 4.1B MAdds as the CondConv-era papers).
BASELINES = {
    "condconv-baseline-mobilenetv2-1.0": (3.5, 300),
    "condconv-baseline-mnasnet-a1": (3.9, 312),
    "condconv-baseline-resnet-50": (25.6, 4089),
}


@pytest.mark.parametrize("variant", list(BASELINES))
def test_new_baselines_params_match_their_papers(variant):
    params = sum(p.numel() for p in build(variant).parameters())
    assert params == GOLDEN[variant][0]
    assert params / 1e6 == pytest.approx(BASELINES[variant][0], abs=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(BASELINES))
def test_new_baselines_macs_match_their_papers(variant):
    assert _profile(variant)[1] / 1e6 == pytest.approx(BASELINES[variant][1], rel=0.01)


@pytest.mark.parametrize(
    ("variant", "blocks"),
    [("condconv-mobilenetv2-1.0-8e", 7), ("condconv-mnasnet-a1-8e", 6)],
)
def test_inverted_residual_nets_convert_their_last_three_rows(variant, blocks):
    from reproductions.condconv.model import CondClassifier, InvertedResidual

    model = build(variant)
    cond = [isinstance(b.depthwise.conv, CondConv2d) for b in model.blocks if isinstance(b, InvertedResidual)]
    assert cond == [False] * (len(cond) - blocks) + [True] * blocks
    assert isinstance(model.classifier, CondClassifier)


def test_resnet_condconv_converts_the_last_stage_and_classifier():
    from reproductions.condconv.model import CondBottleneck, CondClassifier

    model = build("condconv-resnet-50-8e")
    assert [all(isinstance(b, CondBottleneck) for b in stage) for stage in model.stages] == [False] * 3 + [True]
    assert isinstance(model.fc, CondClassifier)
    assert model(torch.randn(2, 3, 64, 64)).shape == (2, 1000)


def _budget_counts(variant: str) -> tuple[int, int]:
    torch.manual_seed(0)
    model = build(variant, num_classes=10).eval()
    return sum(p.numel() for p in model.parameters()), count_macs(model, torch.randn(1, 1, 28, 28))


def test_budget_models_have_matched_multiply_adds():
    """The static budget net is widened until its MAdds reach the CondConv net's (routing and mixing counted)."""
    (cond_params, cond_macs), (static_params, static_macs) = map(_budget_counts, BUDGET_VARIANTS)
    assert (cond_macs, static_macs) == (1_153_072, 1_191_870)
    assert 1.0 <= static_macs / cond_macs <= 1.05  # the static side gets the channel rounding
    assert cond_params > 4 * static_params  # the capacity CondConv adds is parameters, not compute
