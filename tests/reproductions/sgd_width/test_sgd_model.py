"""Both parameterizations: initialization statistics, the same function at initialization, forward scaling with
width, and the gradient relation that makes an NTK step a standard step with the learning rate over fan-in."""

from __future__ import annotations

import math

import pytest
import torch

from reproductions.sgd_width.model import Conv, Dense, build
from reproductions.sgd_width.variants import FAMILIES

SIGMA_W = math.sqrt(2.0)


@pytest.mark.parametrize("fan_in", [64, 1024])
def test_initial_weight_variance(fan_in):
    torch.manual_seed(0)
    standard = Dense(fan_in, 512, "standard", SIGMA_W, 0.0)
    ntk = Dense(fan_in, 512, "ntk", SIGMA_W, 0.0)
    assert standard.weight.var().item() == pytest.approx(2.0 / fan_in, rel=0.05)
    assert ntk.weight.var().item() == pytest.approx(2.0, rel=0.05)
    assert ntk.scale == pytest.approx(1 / math.sqrt(fan_in)) and standard.scale == 1.0
    conv = Conv(16, 32, 3, "ntk", SIGMA_W, 0.0)
    assert conv.fan_in == 16 * 9 and conv.weight.shape == (32, 16, 3, 3)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_same_function_at_initialization(family):
    """Same random draws: the NTK network computes exactly what the standard one does (W = w / sqrt(fan_in))."""
    shape = (3, 1, 28, 28) if FAMILIES[family].kind == "mlp" else (3, 1, 12, 12)
    x = torch.randn(shape)
    outputs = []
    for parameterization in ("standard", "ntk"):
        torch.manual_seed(1)
        outputs.append(build(family, 2, parameterization, sigma_b=0.1).eval()(x))
    torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("parameterization", ["standard", "ntk"])
def test_preactivation_scale_independent_of_width(parameterization):
    """E[z^2] of a hidden layer stays ~ sigma_w^2 E[relu(z_prev)^2] whatever the width (no 1/width drift)."""
    torch.manual_seed(0)
    x = torch.randn(512, 256)
    second_moments = []
    for width in (64, 1024):
        first = Dense(256, width, parameterization, SIGMA_W, 0.0)
        second = Dense(width, width, parameterization, SIGMA_W, 0.0)
        z = second(torch.relu(first(x)))
        second_moments.append(z.pow(2).mean().item())
    # sigma_w^2 * E[relu(z1)^2] = 2 * (E[z1^2] / 2) = E[z1^2] = 2 * E[x^2] = 2
    assert second_moments == pytest.approx([2.0, 2.0], rel=0.15)


def test_ntk_gradient_is_standard_gradient_over_sqrt_fan_in():
    torch.manual_seed(0)
    x = torch.randn(8, 40)
    layers = {}
    for parameterization in ("standard", "ntk"):
        torch.manual_seed(3)
        layers[parameterization] = Dense(40, 5, parameterization, SIGMA_W, 0.0)
        layers[parameterization](x).pow(2).sum().backward()
    standard, ntk = layers["standard"], layers["ntk"]
    torch.testing.assert_close(ntk.weight.grad, standard.weight.grad / math.sqrt(40))
    torch.testing.assert_close(ntk.bias.grad, standard.bias.grad)


def test_one_sgd_step_ntk_equals_standard_with_lr_over_fan_in():
    """SGD(eps) on the NTK network == SGD on the standard network with eps / fan_in on weights (eps on biases)."""
    x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
    nets = {}
    for parameterization in ("standard", "ntk"):
        torch.manual_seed(5)
        nets[parameterization] = build("mlp", 1, parameterization, sigma_b=0.1)
    eps = 0.5
    torch.optim.SGD(nets["ntk"].parameters(), lr=eps).zero_grad()
    groups = []
    for module in nets["standard"].modules():
        if isinstance(module, Dense):
            groups += [{"params": [module.weight], "lr": eps / module.fan_in}, {"params": [module.bias], "lr": eps}]
    optimizers = {"ntk": torch.optim.SGD(nets["ntk"].parameters(), lr=eps), "standard": torch.optim.SGD(groups)}
    for name, net in nets.items():
        torch.nn.functional.cross_entropy(net(x), y).backward()
        optimizers[name].step()
    torch.testing.assert_close(nets["ntk"](x), nets["standard"](x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_build_shapes_and_fan_in(family):
    model = build(family, 4, "ntk", in_channels=3, image_size=32, num_classes=7)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 7)
    assert model.fan_in == FAMILIES[family].fan_in(4)


def test_ntk_step_in_the_unit_variance_convention():
    """neural-tangents writes NTK as u ~ N(0, 1), z = sigma_w u x / sqrt(fan_in): our w is sigma_w u. One SGD step of
    size eps on w moves the layer as a step of eps / sigma_w^2 on u does (README.md, "What was verified")."""
    torch.manual_seed(2)
    fan_in, eps = 64, 0.3
    ours = Dense(fan_in, 8, "ntk", SIGMA_W, 0.0)
    u = (ours.weight.detach() / SIGMA_W).requires_grad_()
    x, target = torch.randn(5, fan_in), torch.randn(5, 8)
    (ours(x) - target).pow(2).sum().backward()
    (SIGMA_W * torch.nn.functional.linear(x, u) / math.sqrt(fan_in) - target).pow(2).sum().backward()
    with torch.no_grad():
        moved_ours = ours.weight - eps * ours.weight.grad
        moved_u = SIGMA_W * (u - eps / SIGMA_W**2 * u.grad)
    torch.testing.assert_close(moved_ours, moved_u)
