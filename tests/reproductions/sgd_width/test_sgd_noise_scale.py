"""The normalized noise scale on worked values, its inverse, and the model-id table."""

from __future__ import annotations

import math

import pytest

from reproductions.sgd_width.variants import (
    FAMILIES,
    batch_for_noise_scale,
    init_variance,
    model_id,
    noise_scale,
    normalized_noise_scale,
    parse_model_id,
)

SIGMA_W = math.sqrt(2.0)


@pytest.mark.parametrize(
    ("lr", "batch", "n", "parameterization", "fan_in", "expected"),
    [
        # g = 0.5 * 10000 / 100 = 50; NTK: / sigma_w^2 = 2 -> 25
        (0.5, 100, 10_000, "ntk", 64, 25.0),
        # standard: v0 = 2 / 64, so 50 * 64 / 2 = 1600
        (0.5, 100, 10_000, "standard", 64, 1600.0),
        # g = 0.1 * 60000 / 128 = 46.875; standard, fan_in 32: 46.875 * 32 / 2 = 750
        (0.1, 128, 60_000, "standard", 32, 750.0),
        # g = 8 * 5000 / 32 = 1250; NTK: 625
        (8.0, 32, 5_000, "ntk", 288, 625.0),
    ],
)
def test_worked_values(lr, batch, n, parameterization, fan_in, expected):
    assert normalized_noise_scale(lr, batch, n, parameterization, SIGMA_W, fan_in) == pytest.approx(expected)
    assert batch_for_noise_scale(expected, lr, n, parameterization, SIGMA_W, fan_in) == pytest.approx(batch)


def test_noise_scale_is_lr_n_over_b():
    assert noise_scale(0.5, 100, 10_000) == pytest.approx(50.0)


def test_ntk_step_is_standard_step_over_fan_in():
    """lr eps on w (NTK) moves W = w / sqrt(fan_in) by eps / fan_in: both carry the same normalized noise scale."""
    for fan_in in (16, 64, 576):
        ntk = normalized_noise_scale(2.0, 64, 10_000, "ntk", 1.3, fan_in)
        standard = normalized_noise_scale(2.0 / fan_in, 64, 10_000, "standard", 1.3, fan_in)
        assert ntk == pytest.approx(standard)


def test_init_variance_and_unknown_parameterization():
    assert init_variance("ntk", 2.0, 100) == 4.0
    assert init_variance("standard", 2.0, 100) == pytest.approx(0.04)
    with pytest.raises(ValueError, match="unknown parameterization"):
        init_variance("mup", 1.0, 10)


def test_fan_in_grows_with_width():
    assert FAMILIES["mlp"].fan_in(4) == 4 * FAMILIES["mlp"].base_width
    assert FAMILIES["resnet-bn"].fan_in(2, base_width=16) == 32 * 9


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_model_id_round_trip(family):
    for parameterization in ("standard", "ntk"):
        assert parse_model_id(model_id(family, 8, parameterization)) == (family, 8, parameterization)


@pytest.mark.parametrize("bad", ["mlp-4-ntk", "mlp-w0-ntk", "vit-w2-ntk", "mlp-w2-mup", "resnet-bn-wx-standard"])
def test_bad_model_ids(bad):
    with pytest.raises(ValueError, match="not an SGD-width model id"):
        parse_model_id(bad)


def test_g_bar_is_the_same_in_the_unit_variance_ntk_convention():
    """Our NTK weights have variance sigma_w^2; in neural-tangents' convention (variance 1, v0 = 1) the same dynamics
    take the learning rate eps / sigma_w^2 and g_bar is the plain noise scale there: both give one number."""
    eps, batch, n = 2.0, 64, 10_000
    assert normalized_noise_scale(eps, batch, n, "ntk", SIGMA_W, 64) == pytest.approx(noise_scale(eps / 2.0, batch, n))
