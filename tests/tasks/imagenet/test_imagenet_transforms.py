"""ImageNet transforms and AutoAugment (tasks.imagenet.transforms, tasks.imagenet.autoaugment)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from PIL import Image

from tasks.imagenet.autoaugment import (
    EFFICIENTNET_V0_POLICY,
    IMAGENET_POLICY,
    OPS,
    POLICIES,
    AutoAugment,
    apply_op,
)
from tasks.imagenet.transforms import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    EvalTransform,
    TrainTransform,
    center_crop_box,
    crop_fraction_for,
    random_crop_box,
    to_normalized_tensor,
)


def noise_image(width: int = 40, height: int = 30, seed: int = 0) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def test_policy_tables() -> None:
    assert len(IMAGENET_POLICY) == 25 and len(EFFICIENTNET_V0_POLICY) == 25
    assert IMAGENET_POLICY[0] == (("Posterize", 0.4, 8), ("Rotate", 0.6, 9))
    assert EFFICIENTNET_V0_POLICY[0] == (("Equalize", 0.8, 1), ("ShearY", 0.8, 4))
    for policy in POLICIES.values():
        for sub in policy:
            assert len(sub) == 2
            for name, probability, level in sub:
                assert name in OPS and 0.0 <= probability <= 1.0 and 0 <= level <= 10


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_sub_policy_keeps_size_and_mode(policy: str) -> None:
    img = noise_image()
    for index, sub in enumerate(POLICIES[policy]):
        always = tuple((name, 1.0, level) for name, _, level in sub)  # force both operations to run
        out = AutoAugment([always], rng=random.Random(index))(img)
        assert out.size == img.size and out.mode == "RGB", (policy, index, sub)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("level", [0, 5, 10])
def test_every_op_keeps_size(name: str, level: int) -> None:
    img = noise_image(33, 21)
    out = apply_op(img, name, level, random.Random(0))
    assert out.size == img.size and out.mode == "RGB"


def test_magnitude_conventions() -> None:
    img = noise_image()
    pixels = np.asarray(img)
    assert np.array_equal(np.asarray(apply_op(img, "Solarize", 10)), pixels)  # threshold 256: unchanged
    assert np.array_equal(np.asarray(apply_op(img, "Solarize", 0)), 255 - pixels)  # threshold 0: all inverted
    assert np.array_equal(np.asarray(apply_op(img, "Posterize", 10)), pixels)  # 8 bits kept
    assert np.array_equal(np.asarray(apply_op(img, "Posterize", 0)), pixels & 0xF0)  # 4 bits kept
    assert np.array_equal(np.asarray(apply_op(img, "Rotate", 0, random.Random(0))), pixels)
    gray = np.asarray(apply_op(img, "Color", 0)).astype(int)  # factor 0.1: nearly gray
    assert (
        np.abs(gray - gray.mean(axis=2, keepdims=True)).mean() < np.abs(pixels - pixels.mean(axis=2)[..., None]).mean()
    )


def test_unknown_policy_and_op() -> None:
    with pytest.raises(ValueError, match="unknown AutoAugment policy"):
        AutoAugment("cifar")
    with pytest.raises(ValueError, match="unknown operations"):
        AutoAugment([(("Warp", 1.0, 3),)])
    with pytest.raises(ValueError, match="unknown AutoAugment operation"):
        apply_op(noise_image(), "Warp", 3)


def test_autoaugment_is_reproducible_with_a_seeded_rng() -> None:
    img = noise_image()
    first = [np.asarray(AutoAugment(rng=random.Random(5))(img)) for _ in range(2)]
    assert np.array_equal(first[0], first[1])


@pytest.mark.parametrize(("width", "height"), [(40, 30), (30, 40), (500, 375), (7, 7)])
def test_eval_transform_shape_and_normalization(width: int, height: int) -> None:
    out = EvalTransform(image_size=24, crop_fraction=0.875)(noise_image(width, height))
    assert out.shape == (3, 24, 24) and out.dtype == torch.float32
    assert torch.isfinite(out).all()


def test_eval_transform_of_constant_image_is_normalized_constant() -> None:
    img = Image.new("RGB", (50, 40), (255, 128, 0))
    out = EvalTransform(image_size=16)(img)
    expected = (torch.tensor([255, 128, 0]) / 255.0 - torch.tensor(IMAGENET_MEAN)) / torch.tensor(IMAGENET_STD)
    assert torch.allclose(out.mean(dim=(1, 2)), expected, atol=1e-5)
    assert torch.allclose(out.std(dim=(1, 2)), torch.zeros(3), atol=1e-5)


def test_eval_transform_takes_the_center() -> None:
    # A 256x256 image whose central 224x224 is white and border black: at crop fraction 0.875 the eval crop of
    # a 224 px input is exactly the white square.
    img = Image.new("RGB", (256, 256), (0, 0, 0))
    img.paste((255, 255, 255), (16, 16, 240, 240))
    out = EvalTransform(image_size=224, crop_fraction=0.875)(img)
    white = (1.0 - torch.tensor(IMAGENET_MEAN)) / torch.tensor(IMAGENET_STD)
    assert torch.allclose(out[:, 1:-1, 1:-1].amin(dim=(1, 2)), white, atol=1e-4)


def test_crop_fraction_for_matches_efficientnet() -> None:
    assert crop_fraction_for(224) == 0.875
    assert crop_fraction_for(600) == pytest.approx(600 / 632)


def test_random_crop_box_area_and_aspect() -> None:
    rng = random.Random(0)
    for _ in range(200):
        left, upper, right, lower = random_crop_box(500, 375, rng)
        w, h = right - left, lower - upper
        assert 0 <= left and right <= 500 and 0 <= upper and lower <= 375
        assert 0.07 <= w * h / (500 * 375) <= 1.0
        assert 3 / 4 - 0.02 <= w / h <= 4 / 3 + 0.02


def test_random_crop_box_falls_back_for_extreme_aspect() -> None:
    assert random_crop_box(1000, 2, random.Random(0)) is None  # no 3/4..4/3 crop of >= 8% area fits
    assert center_crop_box(1000, 2, 0.875) == (499.125, 0.125, 500.875, 1.875)


@pytest.mark.parametrize("autoaugment", [False, True, "efficientnet-v0"])
def test_train_transform_shape(autoaugment: bool | str) -> None:
    transform = TrainTransform(image_size=20, autoaugment=autoaugment, rng=random.Random(0))
    for size in [(40, 30), (1000, 2), (8, 8)]:
        out = transform(noise_image(*size))
        assert out.shape == (3, 20, 20) and out.dtype == torch.float32


def test_to_normalized_tensor_layout() -> None:
    img = Image.new("RGB", (3, 2), (0, 0, 0))
    img.putpixel((2, 1), (255, 0, 0))
    out = to_normalized_tensor(img)
    assert out.shape == (3, 2, 3)
    assert out[0, 1, 2] == pytest.approx((1 - IMAGENET_MEAN[0]) / IMAGENET_STD[0])
