"""UDA's objective piece by piece (arXiv 1904.12848v6, Section 2.2, 2.4, Appendix A.1): TSA's thresholds and what
they drop, the sharpened and masked KL consistency term on hand-computed values, and that no gradient reaches the
target side."""

from __future__ import annotations

import math

import pytest
import torch

from harness.errors import HarnessError
from reproductions.uda.model import (
    consistency_loss,
    supervised_loss,
    tsa_alpha,
    tsa_keep,
    tsa_threshold,
    uda_objective,
)


@pytest.mark.parametrize(
    ("schedule", "start", "middle", "end"),
    [
        ("linear", 0.0, 0.5, 1.0),
        ("log", 0.0, 1 - math.exp(-2.5), 1 - math.exp(-5)),
        ("exp", math.exp(-5), math.exp(-2.5), 1.0),
        ("none", 1.0, 1.0, 1.0),
    ],
)
def test_tsa_alpha_at_start_middle_end(schedule: str, start: float, middle: float, end: float) -> None:
    assert [tsa_alpha(schedule, p) for p in (0.0, 0.5, 1.0)] == pytest.approx([start, middle, end], abs=1e-12)


def test_tsa_threshold_rises_from_one_over_k_to_one() -> None:
    k = 10
    assert tsa_threshold("linear", 0.0, k) == pytest.approx(0.1)
    assert tsa_threshold("linear", 0.5, k) == pytest.approx(0.55)
    assert tsa_threshold("linear", 1.0, k) == pytest.approx(1.0)
    assert tsa_threshold("log", 0.5, k) == pytest.approx((1 - math.exp(-2.5)) * 0.9 + 0.1)
    assert tsa_threshold("exp", 0.5, k) == pytest.approx(math.exp(-2.5) * 0.9 + 0.1)
    assert tsa_threshold("exp", 0.0, k) == pytest.approx(math.exp(-5) * 0.9 + 0.1)
    # exp releases the signal last, log first: at mid-training exp < linear < log
    assert tsa_threshold("exp", 0.5, k) < tsa_threshold("linear", 0.5, k) < tsa_threshold("log", 0.5, k)
    assert tsa_threshold("linear", 2.0, k) == pytest.approx(1.0)  # past the end: clipped
    with pytest.raises(HarnessError, match="unknown TSA schedule 'cosine'"):
        tsa_threshold("cosine", 0.5, k)


def test_tsa_drops_examples_above_the_threshold() -> None:
    # correct-class probabilities: 0.9, 0.5 and 0.1 (two classes)
    logits = torch.tensor([[math.log(9), 0.0], [0.0, 0.0], [0.0, math.log(9)]])
    labels = torch.tensor([0, 0, 0])
    assert tsa_keep(logits, labels, 0.6).tolist() == [False, True, True]
    loss, kept = supervised_loss(logits, labels, 0.6)
    per_example = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
    assert kept == pytest.approx(2 / 3)
    assert loss.item() == pytest.approx(per_example[1:].mean().item())
    full, kept_all = supervised_loss(logits, labels, 1.0)
    assert kept_all == 1.0 and full.item() == pytest.approx(per_example.mean().item())


def test_tsa_dropping_everything_gives_zero_loss_and_zero_gradient() -> None:
    logits = torch.tensor([[5.0, 0.0]], requires_grad=True)
    loss, kept = supervised_loss(logits, torch.tensor([0]), 0.5)
    loss.backward()
    assert kept == 0.0 and loss.item() == 0.0 and torch.all(logits.grad == 0)


def test_kl_on_a_hand_example() -> None:
    original = torch.tensor([[math.log(3), 0.0]])  # p = (0.75, 0.25)
    augmented = torch.tensor([[0.0, 0.0]])  # q = (0.5, 0.5)
    loss, unmasked = consistency_loss(original, augmented, temperature=1.0, threshold=0.0)
    assert unmasked == 1.0
    assert loss.item() == pytest.approx(0.75 * math.log(1.5) + 0.25 * math.log(0.5), rel=1e-6)
    # sharpening with tau = 0.5 squares the odds: p^sharp = (0.9, 0.1)
    sharp, _ = consistency_loss(original, augmented, temperature=0.5, threshold=0.0)
    assert sharp.item() == pytest.approx(0.9 * math.log(1.8) + 0.1 * math.log(0.2), rel=1e-6)
    same, _ = consistency_loss(original, original.clone(), temperature=1.0)
    assert same.item() == pytest.approx(0.0, abs=1e-7)


def test_masking_uses_the_unsharpened_confidence_and_divides_by_the_whole_batch() -> None:
    # example 0: max p = 0.75 (masked at beta = 0.8 even though sharpening makes it 0.9); example 1: max p = 0.9
    original = torch.tensor([[math.log(3), 0.0], [math.log(9), 0.0]])
    augmented = torch.zeros(2, 2)
    loss, unmasked = consistency_loss(original, augmented, temperature=1.0, threshold=0.8)
    assert unmasked == 0.5
    second = 0.9 * math.log(1.8) + 0.1 * math.log(0.2)
    assert loss.item() == pytest.approx(second / 2, rel=1e-6)  # one example's KL over a batch of two
    nothing, none_left = consistency_loss(original, augmented, temperature=1.0, threshold=0.95)
    assert none_left == 0.0 and nothing.item() == 0.0


def test_no_gradient_reaches_the_target() -> None:
    original = torch.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
    augmented = torch.tensor([[0.0, 1.0, 0.0]], requires_grad=True)
    loss, _ = consistency_loss(original, augmented, temperature=0.4, threshold=0.0)
    loss.backward()
    assert original.grad is None
    assert augmented.grad is not None and augmented.grad.abs().sum() > 0
    # the gradient on the augmented logits is softmax(augmented) - target, the KL's (and the CE's) gradient
    target = (original.detach() / 0.4).softmax(-1)
    assert torch.allclose(augmented.grad, augmented.detach().softmax(-1) - target, atol=1e-6)


def test_the_objective_sums_supervised_and_weighted_consistency() -> None:
    torch.manual_seed(0)
    labelled, labels = torch.randn(4, 3), torch.tensor([0, 1, 2, 0])
    original, augmented = torch.randn(8, 3) * 3, torch.randn(8, 3)
    result = uda_objective(
        labelled, labels, original, augmented, weight=2.0, tsa_eta=1.0, temperature=0.4, confidence=0.5
    )
    supervised, _ = supervised_loss(labelled, labels)
    consistency, _ = consistency_loss(original, augmented, 0.4, 0.5)
    assert result.loss.item() == pytest.approx(supervised.item() + 2.0 * consistency.item(), rel=1e-6)
    baseline = uda_objective(labelled, labels)  # no unlabelled data: the supervised loss alone
    assert baseline.loss.item() == pytest.approx(supervised.item()) and baseline.consistency.item() == 0.0
    with pytest.raises(HarnessError, match="temperature must be positive"):
        consistency_loss(original, augmented, temperature=0.0)
